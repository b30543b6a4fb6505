package engine

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/internal/wire"
)

// TestSnapshotMetamorphic runs random scripts (TestStream events, bundles
// handed out, committed with outputs, residuals and timers, split,
// processing time advanced) on an engine; at a random consistent point it
// snapshots the engine, restores the snapshot into a new engine and plays
// the rest of the script on both. Every bundle, commit, split, wakeup,
// expired state window, watermark and Done must be the same, and so must
// their snapshots at every later consistent point.
func TestSnapshotMetamorphic(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	restored, compared := 0, 0
	for i := 0; i < 600; i++ {
		if i == 300 {
			// Its script 291 left stale GBK timers that encoded unequally.
			r = rand.New(rand.NewSource(21))
		}
		spec := simPipeline(t, r)
		ops := simScript(r)
		a := newSim(t, spec)
		var b *sim
		want := r.Intn(len(ops))
		for j, op := range ops {
			la := a.step(op)
			if b != nil {
				lb := b.step(op)
				if strings.Join(la, "\n") != strings.Join(lb, "\n") {
					t.Fatalf("script %d, op %d %+v: original\n%s\nrestored\n%s", i, j, op, strings.Join(la, "\n"), strings.Join(lb, "\n"))
				}
			}
			if bundlesInFlight(a.e) > 0 || a.e.flow.err != nil {
				continue
			}
			snap := mustSnapshot(t, a.e)
			switch {
			case b != nil:
				if !bytes.Equal(snap, mustSnapshot(t, b.e)) {
					t.Fatalf("script %d, op %d: snapshots differ after the same ops", i, j)
				}
				compared++
			case j >= want:
				b = &sim{t: t, spec: spec, e: mustRestore(t, spec, snap)}
				if again := mustSnapshot(t, b.e); !bytes.Equal(again, snap) {
					t.Fatalf("script %d, op %d: snapshot of the restored engine differs from its source", i, j)
				}
				restored++
			}
		}
	}
	if restored < 400 || compared < 2000 {
		t.Errorf("only %d restores and %d later snapshot comparisons: the scripts reach too few consistent points", restored, compared)
	}
	t.Logf("%d restores, %d later snapshots compared", restored, compared)
}

func newSim(t testing.TB, spec Spec) *sim {
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, spec: spec, e: e}
}

func mustSnapshot(t testing.TB, e *Engine) []byte {
	t.Helper()
	acknowledgeLast(e)
	b, err := e.snapshotAtRest()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRestore(t *testing.T, spec Spec, snap []byte) *Engine {
	t.Helper()
	e, err := Restore(spec, snap)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A snapshot with bundles in flight, of a newer format, of another
// pipeline, or damaged is refused with an error that says so.
func TestSnapshotRefusals(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	spec := simPipeline(t, r)
	s := newSim(t, spec)
	s.step(simOp{kind: "ready"})
	if bundlesInFlight(s.e) == 0 {
		t.Fatal("no bundle in flight to test with")
	}
	acknowledgeLast(s.e)
	if _, err := s.e.snapshotAtRest(); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Errorf("snapshot with bundles in flight: err = %v", err)
	}
	s.step(simOp{kind: "drain"})
	snap := mustSnapshot(t, s.e)

	var w wire.Writer
	w.String(snapshotMagic)
	w.Uint(SnapshotVersion + 1)
	if _, err := Restore(spec, w.Bytes()); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("newer version: err = %v", err)
	}
	other := spec
	other.Stages = append([]StageSpec(nil), spec.Stages...)
	other.Stages[3].ID = "other"
	if _, err := Restore(other, snap); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("other pipeline: err = %v", err)
	}
	if _, err := Restore(spec, []byte("junk")); err == nil {
		t.Error("junk restored")
	}
	for n := 0; n < len(snap); n++ {
		if _, err := Restore(spec, snap[:n]); err == nil {
			t.Fatalf("snapshot truncated to %d of %d bytes restored", n, len(snap))
		}
	}
}

// FuzzRestore: Restore never panics on damaged snapshots; it either
// errs or gives an engine whose own snapshot restores again.
func FuzzRestore(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	spec := simPipeline(f, r)
	s := newSim(f, spec)
	for _, op := range simScript(r) {
		s.step(op)
		if bundlesInFlight(s.e) == 0 && s.e.flow.err == nil {
			f.Add(mustSnapshot(f, s.e))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Restore(spec, b)
		if err != nil {
			return
		}
		acknowledgeLast(e)
		if snap, err := e.snapshotAtRest(); err == nil {
			if _, err := Restore(spec, snap); err != nil {
				t.Fatalf("snapshot of a restored engine does not restore: %v", err)
			}
		}
	})
}
