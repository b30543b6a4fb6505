package agg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// customWin is a beam:coder:custom_window:v1 window: its max timestamp,
// then the SDK's bytes for it.
func customWin(maxTS int64, sdk string) []byte {
	return append(coders.AppendTimestamp(nil, maxTS), sdk...)
}

func customPanes(t *testing.T, g *GBK) []string {
	t.Helper()
	var out []string
	for _, p := range g.Fire() {
		vals := make([]string, len(p.Values))
		for i, v := range p.Values {
			vals[i] = string(v)
		}
		out = append(out, fmt.Sprintf("%s %s ts=%d [%s]", p.Key, p.Window[coders.TimestampSize:], p.Timestamp, strings.Join(vals, " ")))
	}
	return out
}

// The SDK names the windows of its answer as it decoded them: when the
// window coder keeps less precision than the window had, with another max
// timestamp prefix than the elements carried. The elements still go to the
// merged window, both of those whose prefixes differ from the SDK's.
func TestSDKMergeNamesWindowsByTheirSDKBytes(t *testing.T) {
	g, err := New(Config{Window: coders.CustomWindows, Merging: true, SDKMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		win   []byte
		value string
	}{
		{customWin(1000, "a"), "x"}, {customWin(999, "a"), "y"}, {customWin(2000, "b"), "z"}, {customWin(5000, "c"), "w"},
	} {
		if err := g.Add([]byte("k"), e.win, []byte(e.value), 900, coders.MinTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	reqs := g.TakeMergeRequests()
	if len(reqs) != 1 || len(reqs[0].Windows) != 4 {
		t.Fatalf("requests %v, want one for k with 4 windows", reqs)
	}
	merge := Merge{Result: customWin(1999, "m"), Originals: [][]byte{customWin(998, "a"), customWin(1999, "b")}}
	if err := g.ApplyMerges([]MergeResult{{Key: []byte("k"), Merges: []Merge{merge}}}); err != nil {
		t.Fatal(err)
	}
	g.AdvanceWatermark(coders.MaxTimestamp)
	got := strings.Join(customPanes(t, g), "\n")
	want := "k m ts=1999 [x y z]\nk c ts=5000 [w]"
	if got != want {
		t.Errorf("panes:\n%s\nwant:\n%s", got, want)
	}
}
