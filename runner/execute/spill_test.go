package execute

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/store"
)

func init() {
	beam.RegisterFunction(keyMod)
	beam.RegisterFunction(sumGroup)
}

func keyMod(i int) (int, int) { return i % 7, i }

func sumGroup(k int, vs func(*int) bool) int {
	sum, v := 0, 0
	for vs(&v) {
		sum += v
	}
	return sum
}

// TestGroupByKeyMemoryLimit is metamorphic: the same GroupByKey pipeline
// without a limit and with a limit far below its data must give the same
// (asserted) result, and the limited run must have spilled to the store
// and left nothing there.
func TestGroupByKeyMemoryLimit(t *testing.T) {
	const n = 20000
	build := func() *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		nums := make([]int, n)
		for i := range nums {
			nums[i] = i
		}
		sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, beam.ParDo(s, keyMod, beam.CreateList(s, nums))))
		want := make([]int, 7)
		for i := 0; i < n; i++ {
			want[i%7] += i
		}
		passert.Equals(s, sums, beam.CreateList(s, want))
		passert.Count(s, sums, "sums", 7)
		stats.Sum(s, sums)
		return p
	}
	if err := runPipeline(t, build()); err != nil {
		t.Fatalf("without a limit: %v", err)
	}
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before := st.WrittenBytes()
	if err := runPipelineWith(t, build(), Options{Store: st, MemoryLimit: 4 << 10, BoundPending: true}, map[string]any{}); err != nil {
		t.Fatalf("with a 4 KiB limit: %v", err)
	}
	if w := st.WrittenBytes() - before; w < n*2 {
		t.Errorf("the limited run wrote %d bytes to the store; want its values spilled", w)
	}
	if err := st.Space(spillPrefix).Scan(nil, func(k, v []byte) error {
		t.Errorf("spill left %q behind", k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
