package agg

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/internal/wire"
)

// snapshotConfigs cover the fast path and the general machine: early and
// late firings, processing-time and count triggers, composites, sessions,
// accumulation, allowed lateness and output times.
func snapshotConfigs() []Config {
	early := tEOW(tPT(delay(7)), tCount(1))
	return []Config{
		{Window: fixed},
		{Window: coders.GlobalWindow, OutputTime: pipepb.OutputTime_EARLIEST_IN_PANE},
		withLateness(goSDK(early, fixed), 15),
		accumulating(withLateness(Config{Trigger: tEOW(tCount(2), tCount(1)), Window: fixed}, 20)),
		goSDK(tRepeat(tAny(tCount(3), tPT(delay(5)))), fixed),
		withOutputTime(goSDK(tRepeat(tEach(tCount(2), tPT(alignTo(10, 3)))), fixed), pipepb.OutputTime_LATEST_IN_PANE),
		withLateness(sessions(tEOW(tCount(2), tAlways())), 10),
		accumulating(sessions(tRepeat(tAll(tCount(2), tSyncPT())))),
		sessions(nil),
		goSDK(tOrFinally(tRepeat(tCount(2)), tPT(delay(12))), coders.GlobalWindow),
	}
}

// snapshotScript is a random script of adds (with arrival times), deferred
// batches of input, watermark and processing-time advances and probes, for interval windows (sessions
// of random length when merging) or the global window.
func snapshotScript(r *rand.Rand, cfg Config) []string {
	var lines []string
	wm, pt := int64(0), int64(0)
	for n := 5 + r.Intn(50); n > 0; n-- {
		switch r.Intn(9) {
		case 8:
			lines = append(lines, []string{"begin", "end"}[r.Intn(2)])
		case 0:
			wm += int64(r.Intn(15))
			lines = append(lines, fmt.Sprintf("wm %d", wm))
		case 1:
			pt += int64(r.Intn(10))
			lines = append(lines, fmt.Sprintf("pt %d", pt))
		case 2:
			lines = append(lines, "hold", "dropped", "done", "wake")
		default:
			ts := max(0, wm-20+int64(r.Intn(40)))
			win := "g"
			if cfg.Window == fixed {
				start, size := ts-ts%10, int64(10)
				if cfg.Merging {
					start, size = ts, int64(1+r.Intn(8))
				}
				win = fmt.Sprintf("%d-%d", start, start+size)
			}
			key := string(rune('a' + r.Intn(3)))
			lines = append(lines, fmt.Sprintf("add %s %s v%d %d %d", key, win, r.Intn(100), ts, pt+int64(r.Intn(3))))
		}
	}
	return append(lines, "hold", "wake", "end", "wm inf", "dropped", "done")
}

func snapshotGBK(t *testing.T, g *GBK) []byte {
	t.Helper()
	var w wire.Writer
	if err := g.Snapshot(&w); err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

func restoreGBK(t *testing.T, cfg Config, b []byte) *GBK {
	t.Helper()
	r := wire.NewReader(b)
	g, err := Restore(cfg, r)
	if err == nil {
		err = r.Done()
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func stepAll(t *testing.T, g *GBK, line string) []string {
	t.Helper()
	return (&driver{g: g}).mustDo(t, line)
}

// TestSnapshotMetamorphic: a GBK snapshotted at any step of a random
// script and restored behaves exactly like the original for the rest of
// the script (same panes, holds, drops, wakeups), a restored GBK's
// snapshot equals the one it came from, and both end in equal state.
func TestSnapshotMetamorphic(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for ci, cfg := range snapshotConfigs() {
		for i := 0; i < 40; i++ {
			lines := snapshotScript(r, cfg)
			at := r.Intn(len(lines))
			orig, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines[:at] {
				stepAll(t, orig, l)
			}
			snap := snapshotGBK(t, orig)
			restored := restoreGBK(t, cfg, snap)
			if again := snapshotGBK(t, restored); !bytes.Equal(again, snap) {
				t.Fatalf("config %d script %d: snapshot of the restored GBK differs", ci, i)
			}
			for j, l := range lines[at:] {
				a, b := stepAll(t, orig, l), stepAll(t, restored, l)
				if strings.Join(a, "\n") != strings.Join(b, "\n") {
					t.Fatalf("config %d, restored at line %d of\n%s\nline %d %q: original\n%s\nrestored\n%s",
						ci, at, strings.Join(lines, "\n"), at+j, l, strings.Join(a, "\n"), strings.Join(b, "\n"))
				}
			}
			if !bytes.Equal(snapshotGBK(t, orig), snapshotGBK(t, restored)) {
				t.Fatalf("config %d script %d: final snapshots differ", ci, i)
			}
		}
	}
}

// A snapshot of a newer section version, of another configuration, or a
// truncated one is refused with an error, never a panic.
func TestSnapshotRefusals(t *testing.T) {
	cfg := withLateness(goSDK(tEOW(tCount(1), tCount(1)), fixed), 5)
	g, _ := New(cfg)
	for _, l := range []string{"add a 0-10 x 3 0", "add b 0-10 y 4 0", "wm 5"} {
		stepAll(t, g, l)
	}
	snap := snapshotGBK(t, g)
	var w wire.Writer
	w.Uint(snapshotVersion + 1)
	if _, err := Restore(cfg, wire.NewReader(append(w.Bytes(), snap[1:]...))); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("newer version: err = %v", err)
	}
	if _, err := Restore(Config{Window: fixed}, wire.NewReader(snap)); err == nil {
		t.Error("restoring a machine snapshot into a fast-path GBK succeeded")
	}
	for n := 0; n < len(snap); n++ {
		r := wire.NewReader(snap[:n])
		if _, err := Restore(cfg, r); err == nil && r.Done() == nil {
			t.Fatalf("truncated at %d of %d bytes: no error", n, len(snap))
		}
	}
	if _, err := Restore(cfg, wire.NewReader(snap[:3])); !errors.Is(err, wire.ErrTruncated) {
		t.Errorf("truncated: err = %v, want ErrTruncated", err)
	}
}
