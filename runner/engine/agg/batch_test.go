package agg

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// TestBatchMatchesMachine runs random scripts through the fast path and the
// general state machine and requires the same panes, in the same order.
// Holds may differ: the fast path's is a lower bound (it holds at most as
// late as the machine).
func TestBatchMatchesMachine(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		kind := coders.GlobalWindow
		if i%2 == 1 {
			kind = coders.IntervalWindows
		}
		cfg := goSDK(tDefault(), kind)
		if i%3 == 0 {
			cfg.OutputTime = pipepb.OutputTime_EARLIEST_IN_PANE
		}
		slow := cfg
		slow.noFastPath = true
		fast, err := New(cfg)
		if err != nil || fast.fast == nil {
			t.Fatalf("config %+v does not take the fast path (err %v)", cfg, err)
		}
		lines := randomScript(r, kind)
		got := runScript(t, cfg, lines)
		want := runScript(t, slow, lines)
		if g, w := panesOnly(got), panesOnly(want); g != w {
			t.Fatalf("script %d:\n%s\nfast:\n%s\nmachine:\n%s", i, strings.Join(lines, "\n"), g, w)
		}
		for j := range got {
			if strings.HasPrefix(got[j], "hold=") {
				gh, err1 := parseTime(strings.Replace(strings.TrimPrefix(got[j], "hold="), "eogw", fmt.Sprint(coders.EndOfGlobalWindow), 1))
				wh, err2 := parseTime(strings.Replace(strings.TrimPrefix(want[j], "hold="), "eogw", fmt.Sprint(coders.EndOfGlobalWindow), 1))
				if err1 != nil || err2 != nil {
					t.Fatalf("script %d: holds %s and %s: %v %v", i, got[j], want[j], err1, err2)
				}
				if gh > wh {
					t.Fatalf("script %d: fast hold %s later than machine's %s", i, got[j], want[j])
				}
			}
		}
	}
}

func panesOnly(lines []string) string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "hold=") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func randomScript(r *rand.Rand, kind coders.WindowKind) []string {
	var lines []string
	wm := int64(0)
	for n := r.Intn(40); n > 0; n-- {
		switch r.Intn(6) {
		case 0:
			wm += int64(r.Intn(30))
			lines = append(lines, fmt.Sprintf("wm %d", wm))
		case 1:
			lines = append(lines, "hold", "dropped", "done")
		default:
			ts := max(0, wm-10+int64(r.Intn(40)))
			win := "g"
			if kind == coders.IntervalWindows {
				start := ts - ts%10
				win = fmt.Sprintf("%d-%d", start, start+10)
			}
			key := string(rune('a'+r.Intn(4))) + strings.Repeat("k", r.Intn(10))
			lines = append(lines, fmt.Sprintf("add %s %s v%d %d", key, win, r.Intn(100), ts))
		}
	}
	return append(lines, "hold", "wm inf", "dropped", "done")
}
