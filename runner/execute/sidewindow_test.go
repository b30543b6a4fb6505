package execute

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
)

// waited are the main elements waitOnSignal processed; the pipeline runs
// LOOPBACK, in this process, so a probe of the stream can read it.
var waited sync.Map

func init() {
	beam.RegisterFunction(waitOnSignal)
	beam.RegisterFunction(probeWaited)
	beam.RegisterFunction(mainElement)
}

// probeBase marks a stream's probe elements: probe probeBase+w comes after
// the watermark passed window w, of seconds [2w-2, 2w).
const probeBase = 100

func mainElement(n int, emit func(int)) {
	if n < probeBase {
		emit(n)
	}
}

// waitOnSignal passes main elements on once the signal's window is
// readable, as Java's Wait.on does, and notes them.
func waitOnSignal(n int, signal []int) int {
	waited.Store(n, true)
	return n
}

// probeWaited checks, on each probe, that the main elements of the
// window the watermark just passed were processed.
func probeWaited(n int, emit func(string)) {
	if n < probeBase {
		return
	}
	w := n - probeBase
	for _, m := range []int{2*w - 2, 2*w - 1} {
		if _, ok := waited.Load(m); !ok {
			emit(fmt.Sprintf("element %d not processed once the watermark passed its window", m))
			return
		}
	}
	emit("ok")
}

// A streaming ParDo reading a side input in fixed windows processes a main
// element as soon as the side input's window is complete, before the
// stream's next event: the shape of Java's Wait.on (a WindowInto, then a
// map waiting on the signal), whose WaitTest#testWindowExpiration saw
// nothing processed until the stream ended.
func TestSideInputReadyPerWindow(t *testing.T) {
	waited.Clear()
	con := teststream.NewConfig()
	for w := 1; w <= 3; w++ {
		lo := int64(2*w-2) * 1000
		if err := con.AddElements(lo, 2*w-2); err != nil {
			t.Fatal(err)
		}
		if err := con.AddElements(lo+1000, 2*w-1); err != nil {
			t.Fatal(err)
		}
		if err := con.AdvanceWatermark(lo + 2000); err != nil {
			t.Fatal(err)
		}
		if err := con.AddElements(lo+2000, probeBase+w); err != nil {
			t.Fatal(err)
		}
	}
	p, s := beam.NewPipelineWithRoot()
	stream := teststream.Create(s, con)
	fixed := window.NewFixedWindows(2 * time.Second)
	signal := beam.WindowInto(s, fixed, beam.ParDo(s, mainElement, stream))
	main := beam.WindowInto(s, fixed, beam.ParDo(s, mainElement, stream))
	out := beam.ParDo(s, waitOnSignal, main, beam.SideInput{Input: signal})
	passert.Count(s, beam.WindowInto(s, window.NewGlobalWindows(), out), "main elements", 6)
	passert.Equals(s, beam.ParDo(s, probeWaited, stream), "ok", "ok", "ok")
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}
