package execute

import (
	"github.com/beam-runner/beam-runner/runner/spec"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/store"
)

func init() {
	beam.RegisterFunction(emitHotValues)
	beam.RegisterFunction(sumLengths)
}

// hotValues values of hotValueLen bytes, all under one key: 64 MiB.
const (
	hotValues   = 64 << 10
	hotValueLen = 1 << 10
)

func emitHotValues(_ []byte, emit func(int, string)) {
	v := strings.Repeat("v", hotValueLen-4)
	for i := 0; i < hotValues; i++ {
		emit(1, v+string(rune('a'+i%26))+"xyz")
	}
}

func sumLengths(_ int, vs func(*string) bool) int {
	sum, v := 0, ""
	for vs(&v) {
		sum += len(v)
	}
	return sum
}

// TestHotKeyStateBackedIterable: one key whose 64 MiB of values go through
// a GroupByKey under an 8 MiB --memory_limit reaches the Go SDK as a
// state-backed iterable (pages served over the State API) with every value
// in it: the summed lengths are right, and the store holds nothing after.
func TestHotKeyStateBackedIterable(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	grouped := beam.GroupByKey(s, beam.ParDo(s, emitHotValues, beam.Impulse(s)))
	passert.Equals(s, beam.ParDo(s, sumLengths, grouped), hotValues*hotValueLen)
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	served := hotPagesServed.Load()
	if err := runPipelineWith(t, p, Options{Memory: spec.Memory{Store: st, Limit: 8 << 20, BoundPending: true}}, nil); err != nil {
		t.Fatal(err)
	}
	// 64 MiB, less the 1 MiB held in memory, in 1 MiB pages.
	if n := hotPagesServed.Load() - served; n < 60 {
		t.Errorf("%d hot-key pages served; want the key's values paged", n)
	}
	noSpillLeft(t, st)
}
