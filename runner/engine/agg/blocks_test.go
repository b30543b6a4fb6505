package agg

import (
	"fmt"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// TestBatchBlocks: a window holding several element blocks groups them
// exactly as one slice would: every value once, in arrival order per key,
// with the snapshot and the spill reading all blocks.
func TestBatchBlocks(t *testing.T) {
	const n = 3*elemBlock + 123
	g, err := New(Config{Window: coders.GlobalWindow})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "b", "c"}
	for i := range n {
		if err := g.Add([]byte(keys[i%3]), nil, []byte(fmt.Sprint(i)), int64(i), coders.MinTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.fast.wins[""].count(); got != n {
		t.Fatalf("window counts %d elements, want %d", got, n)
	}
	g.AdvanceWatermark(coders.MaxTimestamp)
	panes := g.Fire()
	if len(panes) != 3 {
		t.Fatalf("%d panes, want one per key", len(panes))
	}
	for k, p := range panes {
		if string(p.Key) != keys[k] {
			t.Errorf("pane %d has key %q, want %q", k, p.Key, keys[k])
		}
		for j, v := range p.Values {
			if want := fmt.Sprint(3*j + k); string(v) != want {
				t.Fatalf("key %s value %d = %s, want %s (arrival order)", p.Key, j, v, want)
			}
		}
		if want := (n - k + 2) / 3; len(p.Values) != want {
			t.Errorf("key %s has %d values, want %d", p.Key, len(p.Values), want)
		}
	}
}
