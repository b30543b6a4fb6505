package execute

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*paneClock)(nil)).Elem())
	beam.RegisterFunction(oneKey)
}

func oneKey(_ []byte) (int, int) { return 0, 1 }

// paneSeen is one pane as a DoFn saw it, on the wall clock.
type paneSeen struct {
	at     time.Time
	timing typex.PaneTiming
	n      int
}

// seenPanes collects what paneClock saw, by run; the loopback worker runs
// in this process.
var seenPanes struct {
	sync.Mutex
	runs map[string][]paneSeen
}

// paneClock notes the wall-clock time at which each pane reaches it.
type paneClock struct{ Run string }

func (f *paneClock) ProcessElement(pn typex.PaneInfo, _ int, vs func(*int) bool) {
	n := 0
	for v := 0; vs(&v); {
		n++
	}
	seenPanes.Lock()
	defer seenPanes.Unlock()
	if seenPanes.runs == nil {
		seenPanes.runs = map[string][]paneSeen{}
	}
	seenPanes.runs[f.Run] = append(seenPanes.runs[f.Run], paneSeen{at: time.Now(), timing: pn.Timing, n: n})
}

// A streaming job over a real unbounded source (periodic.Impulse, no
// TestStream) fires AfterProcessingTime(2s) early panes on the wall
// clock: about every 2 s while the source runs, then the on-time pane
// with the rest when it ends.
func TestEarlyPanesOnWallClock(t *testing.T) {
	const run, interval, length = "early-panes", 250 * time.Millisecond, 9 * time.Second
	p, s := beam.NewPipelineWithRoot()
	start := time.Now()
	ticks := periodic.Impulse(s, start, start.Add(length), interval, false)
	early := trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterProcessingTime().PlusDelay(2 * time.Second))
	win := beam.WindowInto(s, window.NewFixedWindows(time.Hour), ticks, beam.Trigger(early), beam.PanesDiscard())
	beam.ParDo0(s, &paneClock{Run: run}, beam.GroupByKey(s, beam.ParDo(s, oneKey, win)))
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
	seenPanes.Lock()
	panes := seenPanes.runs[run]
	seenPanes.Unlock()
	checkEarlyPaneGaps(t, panes, int(length/interval))
}

// checkEarlyPaneGaps requires at least three early panes, 1-4 s apart
// (2 s, with room for a loaded machine), and every element in one pane.
func checkEarlyPaneGaps(t *testing.T, panes []paneSeen, elements int) {
	t.Helper()
	total := 0
	var early []time.Time
	for _, pn := range panes {
		t.Logf("%s pane of %d at %s", pn.timing, pn.n, pn.at.Format("15:04:05.000"))
		total += pn.n
		if pn.timing == typex.PaneEarly {
			early = append(early, pn.at)
		}
	}
	if total != elements {
		t.Errorf("panes hold %d elements, want %d", total, elements)
	}
	if len(early) < 3 {
		t.Fatalf("%d early panes (%v), want at least 3", len(early), panes)
	}
	for i := 1; i < len(early); i++ {
		if gap := early[i].Sub(early[i-1]); gap < time.Second || gap > 4*time.Second {
			t.Errorf("early pane %d came %v after the one before, want about 2s", i, gap)
		}
	}
}
