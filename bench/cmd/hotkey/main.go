// Command hotkey checks that a key with more values than the memory limit
// holds goes through a GroupByKey, run by hand against a server: one key holding --values_mb MiB of values goes through a
// GroupByKey, and a DoFn sums the values' lengths; the job fails unless
// the sum is right. The source checkpoints every MiB so no bundle's output
// is large. Run it with --runner=universal --endpoint=HOST:PORT
// --environment_type=LOOPBACK and watch the server's peak RSS.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

var (
	valuesMB  = flag.Int64("values_mb", 2048, "MiB of values under the one key")
	valueSize = flag.Int64("value_size", 1024, "bytes per value")
)

func init() {
	beam.RegisterType(reflect.TypeOf((*genFn)(nil)).Elem())
	beam.RegisterFunction(sumLengths)
	beam.RegisterType(reflect.TypeOf((*checkFn)(nil)).Elem())
}

// genFn emits N values of Size bytes under key 1, a MiB per bundle.
type genFn struct{ N, Size int64 }

func (fn *genFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: fn.N}
}

func (fn *genFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (fn *genFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (fn *genFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (fn *genFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int, string)) sdf.ProcessContinuation {
	v := strings.Repeat("v", int(fn.Size))
	pos := rt.GetRestriction().(offsetrange.Restriction).Start
	for n := int64(0); n < max(1, (1<<20)/fn.Size); n++ {
		if !rt.TryClaim(pos) {
			return sdf.StopProcessing()
		}
		emit(1, v)
		pos++
	}
	return sdf.ResumeProcessingIn(0)
}

func sumLengths(_ int, vs func(*string) bool) int64 {
	var sum int64
	var v string
	for vs(&v) {
		sum += int64(len(v))
	}
	return sum
}

type checkFn struct{ Want int64 }

func (fn *checkFn) ProcessElement(sum int64) error {
	if sum != fn.Want {
		return fmt.Errorf("sum of lengths %d, want %d", sum, fn.Want)
	}
	log.Printf("sum of lengths %d: right", sum)
	return nil
}

func main() {
	flag.Parse()
	beam.Init()
	n := (*valuesMB << 20) / *valueSize
	p, s := beam.NewPipelineWithRoot()
	grouped := beam.GroupByKey(s, beam.ParDo(s, &genFn{N: n, Size: *valueSize}, beam.Impulse(s)))
	beam.ParDo0(s, &checkFn{Want: n * *valueSize}, beam.ParDo(s, sumLengths, grouped))
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf("hotkey: %v", err)
	}
	log.Printf("hotkey: %d values of %d B under one key: done", n, *valueSize)
}
