package execute

import (
	"github.com/beam-runner/beam-runner/runner/spec"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
	if err := runPipelineWith(t, build(), Options{Memory: spec.Memory{Store: st, Limit: 4 << 10, BoundPending: true}}, map[string]any{}); err != nil {
		t.Fatalf("with a 4 KiB limit: %v", err)
	}
	if w := st.WrittenBytes() - before; w < n*2 {
		t.Errorf("the limited run wrote %d bytes to the store; want its values spilled", w)
	}
	noSpillLeft(t, st)
}

// noSpillLeft fails the test if the store's scratch holds any bytes: a
// job's spill is removed when it ends.
func noSpillLeft(t *testing.T, st *store.Store) {
	t.Helper()
	u, err := st.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Scratch != 0 {
		t.Errorf("the job's spill left %d bytes in the scratch", u.Scratch)
	}
}

func init() { beam.RegisterFunction(emitRandomValues) }

// emitRandomValues emits 16k values of a KiB of random letters under seven
// keys: 16 MiB that Pebble cannot compress away, so the spill takes that
// much disk.
func emitRandomValues(_ []byte, emit func(int, string)) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]byte, 1<<10)
	for i := 0; i < 16<<10; i++ {
		for j := range v {
			v[j] = byte('a' + r.IntN(26))
		}
		emit(i%7, string(v))
	}
}

// TestSpillGivenBackAtJobEnd runs a job that spills megabytes to a store
// on the disk: the scratch grows while it runs and is empty, directory
// and all, once the job has ended.
func TestSpillGivenBackAtJobEnd(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	grouped := beam.GroupByKey(s, beam.ParDo(s, emitRandomValues, beam.Impulse(s)))
	passert.Count(s, beam.ParDo(s, sumLengths, grouped), "sums", 7)
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var peak atomic.Int64
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if u, err := st.Usage(); err == nil && u.Scratch > peak.Load() {
				peak.Store(u.Scratch)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	err = runPipelineWith(t, p, Options{Memory: spec.Memory{Store: st, Limit: 64 << 10, BoundPending: true}}, nil)
	close(done)
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() < 4<<20 {
		t.Errorf("the scratch peaked at %d bytes while 16 MiB spilled; want the spill on disk", peak.Load())
	}
	noSpillLeft(t, st)
	entries, err := os.ReadDir(filepath.Join(st.Dir(), "scratch"))
	if err != nil || len(entries) != 0 {
		t.Errorf("scratch dir after the job: %v, %v; want it empty", entries, err)
	}
	t.Logf("scratch peak %d bytes, empty after the job", peak.Load())
}
