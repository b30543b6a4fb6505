package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// A checkpoint taken while stateful bundles run gives their keys' input
// and delivered timers back: the restored engine hands out the same work
// again, and the original engine is unchanged.
func TestSnapshotRequeuesStatefulBundles(t *testing.T) {
	e, stream := keyedEngine(t)
	first := nextReady(e).Bundles
	if len(first) != 2 {
		t.Fatalf("Ready = %d bundles, want 2", len(first))
	}
	assertRequeued(t, e, first)
	// Input for a busy key queues behind the bundle's, and stays there.
	e2, _ := keyedEngine(t)
	first2 := nextReady(e2).Bundles
	later := globalKV(2, "a", "4")
	e2.flow.deliver("src", later)
	acknowledgeLast(e2)
	snap, err := e2.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	keyA := string(coders.AppendLengthPrefixed(nil, []byte("a")))
	var inA []byte
	for _, b := range first2 {
		if b.Keys[0] == keyA {
			inA = append(inA, b.Input[0]...)
		}
	}
	if got := mustRestore(t, e2.flow.spec, snap).flow.stage("st").keyed.pending[keyA]; got == nil || string(got.data) != string(inA)+string(later) {
		t.Fatalf("key a's queue after requeuing = %v, want its bundle's input then the later element", got)
	}
	for _, b := range first {
		k, _, _ := coders.LengthPrefixed([]byte(b.Keys[0]))
		tm := timerBytes(string(k), 50, 1, "")
		if err := e.Commit(b.ID, Result{Timers: map[TimerStream][][]byte{stream: {tm}}}); err != nil {
			t.Fatal(err)
		}
	}
	var timers []Bundle
	for i := 0; i < 3 && len(timers) == 0; i++ {
		timers = nextReady(e).Bundles // the watermark event makes the timers due
	}
	if len(timers) != 2 || len(timers[0].Timers[stream]) == 0 {
		t.Fatalf("Ready = %v, want two bundles of timers", timers)
	}
	assertRequeued(t, e, timers)
}

// assertRequeued checks that a checkpoint of e restores to an engine
// whose next bundles carry exactly the work of the given running ones.
func assertRequeued(t *testing.T, e *Engine, running []Bundle) {
	t.Helper()
	before, err := e.snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	acknowledgeLast(e)
	snap, err := e.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := e.snapshot(nil); string(after) != string(before) {
		t.Fatal("SnapshotRequeuingFlight changed the engine")
	}
	if bundlesInFlight(e) != len(running) {
		t.Fatalf("in flight %d, want %d", bundlesInFlight(e), len(running))
	}
	c := mustRestore(t, e.flow.spec, snap)
	again := nextReady(c).Bundles
	if got, want := workOf(again), workOf(running); got != want {
		t.Fatalf("restored engine runs\n%s\nwant\n%s", got, want)
	}
}

// workOf describes bundles without their ids, sorted.
func workOf(bs []Bundle) string {
	var out []string
	for _, b := range bs {
		out = append(out, strings.SplitN(formatBundle(b), " ", 3)[2])
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestSnapshotRequeuingFlightRandom takes checkpoints with bundles in
// flight at random points of random scripts: the restored engine has the
// original's watermarks (the requeued input holds them as the running
// bundles did), restores to the same bytes, has every timer the running
// bundles were delivered set again, hands every element they still owned
// out again, and runs to the end without error.
func TestSnapshotRequeuingFlightRandom(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	checked := 0
	for i := 0; i < 200; i++ {
		spec := simPipeline(t, r)
		a := newSim(t, spec)
		taken := 0
		for j, op := range simScript(r) {
			a.step(op)
			if bundlesInFlight(a.e) == 0 || a.e.flow.err != nil || taken == 2 || r.Intn(4) > 0 {
				continue
			}
			taken++
			acknowledgeLast(a.e)
			snap, err := a.e.SnapshotRequeuingFlight()
			if err != nil {
				t.Fatalf("script %d op %d: %v", i, j, err)
			}
			b := &sim{t: t, spec: spec, e: mustRestore(t, spec, snap)}
			if string(mustSnapshot(t, b.e)) != string(snap) {
				t.Fatalf("script %d op %d: restored snapshot differs", i, j)
			}
			for _, pc := range slices.Sorted(maps.Keys(spec.PColls)) {
				if wa, wb := a.e.Watermark(pc), b.e.Watermark(pc); wa != wb {
					t.Fatalf("script %d op %d: %s watermark %d restored as %d", i, j, pc, wa, wb)
				}
			}
			owed := owedWork(t, a)
			checkRequeued(t, a.e, b.e, owed)
			set := setTimers(b.e)
			var handed []Bundle
			b.handed = &handed
			runToEnd(t, b)
			got := handedOut(t, spec, handed)
			for item, n := range owed {
				if strings.Contains(item, " timer ") {
					// A timer is set again; it may be reset before it fires.
					if !set[item] {
						t.Fatalf("script %d op %d: running bundles owned %s, the restored engine has not set it", i, j, item)
					}
					continue
				}
				if got[item] < n {
					t.Fatalf("script %d op %d: running bundles owned %d× %s, the restored engine handed out %d", i, j, n, item, got[item])
				}
			}
			checked++
		}
	}
	t.Logf("%d checkpoints with bundles in flight", checked)
	if checked < 200 {
		t.Errorf("only %d checkpoints with bundles in flight", checked)
	}
}

// owedWork counts the elements and timers the running bundles own.
func owedWork(t *testing.T, s *sim) map[string]int {
	var bs []Bundle
	for _, b := range s.flight {
		owned, err := s.e.ownedInput(b.ID)
		if err != nil {
			t.Fatal(err)
		}
		b.Input = owned
		bs = append(bs, b)
	}
	return handedOut(t, s.spec, bs)
}

// handedOut counts the elements and timers of bundles, per stage.
func handedOut(t *testing.T, spec Spec, bs []Bundle) map[string]int {
	out := map[string]int{}
	for _, b := range bs {
		var ss StageSpec
		for _, x := range spec.Stages {
			if x.ID == b.Stage {
				ss = x
			}
		}
		for _, c := range b.Input {
			err := coders.EachRaw(c, spec.PColls[ss.Inputs[0]].Codec, func(_ *coders.WindowedValue, raw []byte) error {
				out[fmt.Sprintf("%s element %x", b.Stage, raw)]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, ts := range ss.Timers {
			err := eachTimer(b.Timers[ts.Stream], ts.Codec, func(_ *coders.Timer, raw []byte) {
				out[fmt.Sprintf("%s timer %x", b.Stage, raw)]++
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// runToEnd commits everything and advances processing time until the
// engine is done (scripts whose self-checkpointing never stops are cut).
func runToEnd(t *testing.T, s *sim) {
	for i := 0; i < 200 && !s.e.flow.done(); i++ {
		s.step(simOp{kind: "ready"})
		s.step(simOp{kind: "drain", p: 999, q: 1}) // no new residuals or timer loops
		s.step(simOp{kind: "pt", p: 11})
		if s.e.flow.err != nil {
			t.Fatal(s.e.flow.err)
		}
	}
	if !s.e.flow.done() {
		t.Fatalf("restored engine not done after 200 rounds: %s", strings.Join(s.step(simOp{kind: "probe"}), "\n"))
	}
}

// setTimers lists the timers set in e as handedOut names them.
func setTimers(e *Engine) map[string]bool {
	out := map[string]bool{}
	for _, st := range e.flow.stages {
		if st.keyed == nil {
			continue
		}
		for _, tm := range st.keyed.timers {
			out[fmt.Sprintf("%s timer %x", st.spec.ID, tm.enc)] = true
		}
	}
	return out
}

// checkRequeued: the restored engine's queued input is the original's
// plus what its running bundles owned, element for element, and the
// requeued input of a non-keyed stage holds its output watermark where the
// running bundle held it.
func checkRequeued(t *testing.T, a, b *Engine, owed map[string]int) {
	t.Helper()
	want := queued(t, a)
	for item, n := range owed {
		if !strings.Contains(item, " timer ") {
			want[item] += n
		}
	}
	if got := queued(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restored queues\n%v\nwant\n%v", got, want)
	}
	// A bundle a split left owning nothing holds nothing once requeued;
	// the others hold their stage as they did while running.
	for _, id := range slices.Sorted(maps.Keys(a.flight)) {
		fb := a.flight[id]
		st := b.flow.stage(fb.Stage)
		owned, err := a.ownedInput(id)
		if err != nil {
			t.Fatal(err)
		}
		if st.keyed != nil || len(owned) == 0 {
			continue
		}
		if hb := b.flow.outputWatermark(st); hb > fb.minTS {
			t.Fatalf("bundle %d of stage %s held its output at %d, requeued at %d", id, fb.Stage, fb.minTS, hb)
		}
	}
}

// queued counts the elements waiting in SDK stages' queues.
func queued(t *testing.T, e *Engine) map[string]int {
	out := map[string]int{}
	for _, st := range e.flow.stages {
		var chunks [][]byte
		for _, c := range st.pending {
			chunks = append(chunks, c.data)
		}
		if st.keyed != nil {
			for _, w := range st.keyed.pending {
				chunks = append(chunks, w.data)
			}
		}
		for _, c := range chunks {
			err := coders.EachRaw(c, e.flow.pcolls[st.spec.Inputs[0]].spec.Codec, func(_ *coders.WindowedValue, raw []byte) error {
				out[fmt.Sprintf("%s element %x", st.spec.ID, raw)]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}
