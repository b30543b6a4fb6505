package agg

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// TestRunsGroupExactly: a window sealed into several runs gives every key
// once, in key order, with its values in arrival order and the least
// output time; a budgeted emission that stops between panes and resumes
// (dropping chunks it read past) gives the same bytes as one that does
// not.
func TestRunsGroupExactly(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	const n = 2*elemBlock + 777
	type in struct {
		key, val string
		ts       int64
	}
	ins := make([]in, n)
	for i := range ins {
		ins[i] = in{fmt.Sprintf("k%03d", r.Intn(900)), fmt.Sprint(i), int64(r.Intn(1 << 20))}
	}
	feed := func() *GBK {
		cfg := Config{Window: coders.GlobalWindow, OutputTime: pipepb.OutputTime_EARLIEST_IN_PANE}
		g, err := New(cfg)
		if err != nil || g.fast == nil {
			t.Fatalf("no fast path: %v", err)
		}
		for _, x := range ins {
			if err := g.Add([]byte(x.key), nil, []byte(x.val), x.ts, coders.MinTimestamp); err != nil {
				t.Fatal(err)
			}
		}
		if runs := len(g.fast.wins[""].runs); runs != 2 {
			t.Fatalf("%d runs sealed, want 2", runs)
		}
		g.AdvanceWatermark(coders.MaxTimestamp)
		return g
	}

	want := map[string][]string{}
	least := map[string]int64{}
	for _, x := range ins {
		if _, ok := least[x.key]; !ok {
			least[x.key] = x.ts
		}
		want[x.key] = append(want[x.key], x.val)
		least[x.key] = min(least[x.key], x.ts)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	panes := feed().Fire()
	if len(panes) != len(keys) {
		t.Fatalf("%d panes, want %d", len(panes), len(keys))
	}
	for i, p := range panes {
		k := keys[i]
		if string(p.Key) != k || p.Timestamp != least[k] || len(p.Values) != len(want[k]) {
			t.Fatalf("pane %d: key %q ts %d with %d values, want %q ts %d with %d", i, p.Key, p.Timestamp, len(p.Values), k, least[k], len(want[k]))
		}
		for j, v := range p.Values {
			if string(v) != want[k][j] {
				t.Fatalf("key %s value %d = %s, want %s", k, j, v, want[k][j])
			}
		}
	}

	var whole, budgeted []byte
	feed().FireEncodedTo(1<<20, func(c []byte) { whole = append(whole, c...) })
	g := feed()
	for calls := 0; g.Due(); calls++ {
		if calls > 10*len(keys) {
			t.Fatal("budgeted emission does not finish")
		}
		g.FireEncodedUpTo(4096, 3000, func(c []byte) { budgeted = append(budgeted, c...) })
	}
	if !bytes.Equal(whole, budgeted) {
		t.Fatalf("budgeted emission differs: %d bytes, want %d", len(budgeted), len(whole))
	}
}
