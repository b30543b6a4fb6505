package execute

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/runner/store"
	"google.golang.org/protobuf/proto"
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
	if err := runPipelineWith(t, p, Options{Store: st, MemoryLimit: 8 << 20, BoundPending: true}, nil); err != nil {
		t.Fatal(err)
	}
	// 64 MiB, less the 1 MiB held in memory, in 1 MiB pages.
	if n := hotPagesServed.Load() - served; n < 60 {
		t.Errorf("%d hot-key pages served; want the key's values paged", n)
	}
	noSpillLeft(t, st)
}

// hotGBKs plans a pipeline and returns, per GroupByKey transform name,
// whether the GroupByKey pages hot keys under a memory limit.
func hotGBKs(t *testing.T, pb *pipepb.Pipeline) map[string]bool {
	t.Helper()
	pl, err := plan.Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	space := func(name string) agg.Spill { return namedSpace{name} }
	spec, err := buildSpec(pl, specConfig{Parallelism: 1, Space: space, MemoryLimit: 800})
	if err != nil {
		t.Fatal(err)
	}
	hot := map[string]bool{}
	for i, s := range pl.Stages {
		if s.Kind == stagekind.GBK {
			hot[pl.Components.GetTransforms()[s.Transforms[0]].GetUniqueName()] = spec.Stages[i].Agg.Hot != nil
		}
	}
	return hot
}

// Python stages told their values are state-backed (plan/statebacked.go)
// get hot keys paged, as Go stages do; a GroupByKey whose output is also
// read as a side input, whose reader takes no token, does not.
func TestHotKeysForStateBackedReaders(t *testing.T) {
	b, err := os.ReadFile("../plan/testdata/python_gbk.pb")
	if err != nil {
		t.Fatal(err)
	}
	var pb pipepb.Pipeline
	if err := proto.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	hot := hotGBKs(t, &pb)
	for name, want := range map[string]bool{"Main": true, "Side": false} {
		if got, ok := hot[name]; !ok || got != want {
			t.Errorf("Python GroupByKey %s: hot keys paged %v (planned %v), want %v", name, got, ok, want)
		}
	}
	var combines int
	for name, got := range hot {
		if strings.HasPrefix(name, "CombinePerKey") {
			combines++
			if !got {
				t.Errorf("lifted combine's GroupByKey %s does not page hot keys", name)
			}
		}
	}
	if combines != 1 {
		t.Errorf("%d lifted combine GroupByKeys in %v, want 1", combines, hot)
	}
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, sumLengths, beam.GroupByKey(s, beam.ParDo(s, emitHotValues, beam.Impulse(s))))
	for name, got := range hotGBKs(t, marshalForTest(t, p)) {
		if !got {
			t.Errorf("Go GroupByKey %s does not page hot keys", name)
		}
	}
}
