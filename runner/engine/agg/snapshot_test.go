package agg

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// runLines feeds script lines to g, collecting outputs and fired panes.
func runLines(t *testing.T, g *GBK, lines []string) []string {
	t.Helper()
	var out []string
	for _, line := range lines {
		out = append(out, step(t, g, strings.Fields(line))...)
		for _, p := range g.Fire() {
			out = append(out, formatPane(t, p))
		}
	}
	return out
}

// TestGBKSnapshotRestore: cut random scripts at a random point, snapshot,
// restore; the restored GroupByKey snapshots to the same bytes and then
// behaves like the original over the rest of the script.
func TestGBKSnapshotRestore(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for i := 0; i < 300; i++ {
		kind := coders.GlobalWindow
		if i%2 == 1 {
			kind = coders.IntervalWindows
		}
		cfg := goSDK(tDefault(), kind)
		if i%3 == 0 {
			cfg.OutputTime = pipepb.OutputTime_EARLIEST_IN_PANE
		}
		lines := randomScript(r, kind)
		cut := r.Intn(len(lines) + 1)
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		runLines(t, g, lines[:cut])
		snap, err := g.Snapshot()
		if err != nil {
			t.Fatalf("script %d: Snapshot: %v", i, err)
		}
		back, err := RestoreGBK(cfg, snap)
		if err != nil {
			t.Fatalf("script %d: RestoreGBK: %v", i, err)
		}
		if again, err := back.Snapshot(); err != nil || !bytes.Equal(again, snap) {
			t.Fatalf("script %d: restored GroupByKey snapshots differently (%v)", i, err)
		}
		want, got := runLines(t, g, lines[cut:]), runLines(t, back, lines[cut:])
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("script %d cut at %d:\n%s\nrestored:\n%s\noriginal:\n%s", i, cut,
				strings.Join(lines, "\n"), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestGBKSnapshotRefusals(t *testing.T) {
	cfg := goSDK(tDefault(), coders.GlobalWindow)
	g, _ := New(cfg)
	runLines(t, g, []string{"add a g v1 5", "add b g v2 6"})
	snap, err := g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte(gbkSnapshotMagic), GBKSnapshotVersion+1)
	newer = append(newer, snap[len(gbkSnapshotMagic)+1:]...)
	for name, tc := range map[string]struct {
		in   []byte
		want string
	}{
		"newer version":  {newer, "snapshot version 2"},
		"not a snapshot": {[]byte("x"), "not a GroupByKey snapshot"},
		"truncated":      {snap[:len(snap)-1], "bad GroupByKey snapshot"},
		"trailing":       {append(bytes.Clone(snap), 0), "trailing bytes"},
	} {
		if _, err := RestoreGBK(cfg, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	slow := cfg
	slow.noFastPath = true
	gs, _ := New(slow)
	if _, err := gs.Snapshot(); err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Errorf("general machine Snapshot: %v", err)
	}
}

// FuzzRestoreGBK: restore never panics, and accepts only canonical bytes.
func FuzzRestoreGBK(f *testing.F) {
	cfg := goSDK(tDefault(), coders.GlobalWindow)
	r := rand.New(rand.NewSource(9))
	for i := 0; i < 6; i++ {
		g, _ := New(cfg)
		lines := randomScript(r, coders.GlobalWindow)
		for _, l := range lines[:len(lines)/2] {
			fs := strings.Fields(l)
			if fs[0] == "add" {
				g.Add([]byte(fs[1]), nil, []byte(fs[3]), 0, 0)
			}
		}
		if snap, err := g.Snapshot(); err == nil {
			f.Add(snap)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := RestoreGBK(cfg, b)
		if err != nil {
			return
		}
		if again, err := g.Snapshot(); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted non-canonical %x (re-snapshots to %x, %v)", b, again, err)
		}
	})
}
