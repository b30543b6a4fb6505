package agg

import (
	"bytes"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

func TestAlignUp(t *testing.T) {
	// The Go SDK's AlignToTransform doc: period 20, offset 45 aligns at
	// 5, 25, 45, ...: 0..5 -> 5, 6..25 -> 25.
	for in, want := range map[int64]int64{0: 5, 5: 5, 6: 25, 25: 25, 26: 45, -16: -15} {
		if got := alignUp(in, 20, 45); got != want {
			t.Errorf("alignUp(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	bad := []Config{
		{Accumulation: pipepb.AccumulationMode_RETRACTING},
		{Trigger: &pipepb.Trigger{}},
		{Trigger: tCount(0)},
		{Trigger: tAll()},
		{Trigger: tPT(alignTo(0, 0))},
		{Window: coders.OtherWindow},
		{Window: coders.GlobalWindow, Merging: true},
		{OutputTime: pipepb.OutputTime_Enum(42)},
	}
	for i, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("config %d: New succeeded, want error", i)
		}
	}
	g, err := New(Config{Window: fixed})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range [][]byte{nil, {1, 2}, append(iw(0, 10), 0)} {
		if err := g.Add([]byte("k"), w, nil, 0, 0); err == nil {
			t.Errorf("Add with window %x succeeded", w)
		}
	}
	gg, _ := New(Config{})
	if err := gg.Add(nil, []byte{0}, nil, 0, 0); err == nil {
		t.Error("global GBK accepted a non-empty window")
	}
}

func TestAppendPane(t *testing.T) {
	p := Pane{
		Key: []byte{3, 'k', 'e', 'y'}, Window: iw(0, 10),
		Values:    [][]byte{{1, 'a'}, {1, 'b'}},
		Timestamp: 9,
		Info:      coders.PaneInfo{IsFirst: true, IsLast: true, Timing: coders.TimingOnTime},
	}
	want := coders.AppendWindowedValueHeader(nil, 9, 1, iw(0, 10), p.Info)
	want = append(want, 3, 'k', 'e', 'y', 0, 0, 0, 2, 1, 'a', 1, 'b')
	if got := AppendPane(nil, p); !bytes.Equal(got, want) {
		t.Errorf("AppendPane = %x, want %x", got, want)
	}
}

// TestPanesStayValid: panes returned earlier must not change when the GBK
// buffers more values (accumulating keeps appending to the same buffer).
func TestPanesStayValid(t *testing.T) {
	g, _ := New(accumulating(goSDK(tRepeat(tCount(1)), fixed)))
	_ = g.Add([]byte("k"), iw(0, 10), []byte("a"), 0, 0)
	first := g.Fire()
	_ = g.Add([]byte("k"), iw(0, 10), []byte("b"), 0, 0)
	second := g.Fire()
	if len(first) != 1 || len(first[0].Values) != 1 || string(first[0].Values[0]) != "a" {
		t.Fatalf("first pane changed: %+v", first)
	}
	if len(second) != 1 || len(second[0].Values) != 2 {
		t.Fatalf("second pane: %+v", second)
	}
}
