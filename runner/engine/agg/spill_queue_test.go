package agg

import "testing"

// queuedSpill is a Spill whose write queue holds queued bytes (Queuing).
type queuedSpill struct {
	Spill
	queued int64
	full   bool
}

func (q *queuedSpill) Queued() (int64, bool) { return q.queued, q.full }

// TestSpillCountsQueuedBytes: a GroupByKey spills once its values and
// what the spill's queue still holds in memory pass its budget, never
// for less than half the budget, and not while the queue is full.
func TestSpillCountsQueuedBytes(t *testing.T) {
	value := make([]byte, 100-elemOverhead) // 100 bytes counted per value
	for _, c := range []struct {
		queued int64
		full   bool
		want   int // values noted when it first says spill; 0: never
	}{
		{queued: 0, want: 11},  // 1,100 > 1,000
		{queued: 300, want: 8}, // 800 + 300 > 1,000
		{queued: 900, want: 6}, // half the budget first: 600 > 500
		{queued: 100, full: true, want: 0},
	} {
		s := &spiller{sp: &queuedSpill{queued: c.queued, full: c.full}, budget: 1000}
		got := 0
		for n := 1; n <= 50 && got == 0; n++ {
			if s.note(nil, value) {
				got = n
			}
		}
		if got != c.want {
			t.Errorf("queued %d, full %v: spills at value %d, want %d", c.queued, c.full, got, c.want)
		}
	}
}
