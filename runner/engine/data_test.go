package engine

import (
	"fmt"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// Split must cut only at element boundaries and lose nothing, for any
// number of parts and chunk layout.
func TestSplitAtElementBoundaries(t *testing.T) {
	wv := wvCodec(t, "wv-kv")
	for _, chunks := range []int{1, 3, 17} {
		for _, n := range []int{2, 3, 7, 64} {
			d := &Data{}
			total := 0
			for c := 0; c < chunks; c++ {
				var buf []byte
				for i := 0; i < 1000; i++ {
					buf = coders.AppendWindowedValue(buf, int64(i), 1, nil, coders.NoFiringPane, kvElem(fmt.Sprint("k", c, i), "value"))
					total++
				}
				d.Add(buf)
			}
			parts, err := Split(d, wv, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) > n {
				t.Errorf("chunks %d n %d: %d parts", chunks, n, len(parts))
			}
			got := 0
			for _, p := range parts {
				err := Each(&Data{Chunks: p}, wv, func(*coders.WindowedValue) error { got++; return nil })
				if err != nil {
					t.Fatalf("chunks %d n %d: part does not parse: %v", chunks, n, err)
				}
			}
			if got != total {
				t.Errorf("chunks %d n %d: %d elements after split, want %d", chunks, n, got, total)
			}
		}
	}
}
