package execute

import (
	"math"

	"github.com/beam-runner/beam-runner/runner/autoscale"
	"github.com/beam-runner/beam-runner/runner/engine"
)

// A batch job is sized by its remaining work (docs/scaling.md "Batch"):
// each pass the engine reports every SDK stage's queued input and the
// input its running bundles still own (engine.Work), the driver takes out
// what their progress says they consumed, and the policy turns that into
// busy seconds by the stage's measured rate.

// workCount is how far elements are counted: past any environment's
// most workers, and enough that a bundle's consumed share is exact for
// bundles up to this size (a larger one counts as not begun).
const workCount = 4096

// batchWork sets each stage's pending input and the bundles it could run
// at once. A running bundle's element in hand counts as left. Pending is
// in elements when every count is exact, else in bytes. A source's
// remaining work is its backlog (its bundles' reported remaining
// restriction), not its input's bytes (restrictions, whose size says
// nothing of the work), at least one element per piece.
func (d *driver) batchWork(st *autoscale.StageInput, splittable bool, w engine.StageWork) {
	bytes, pieces := float64(w.QueuedBytes), w.Pieces
	elems, exact := float64(w.QueuedElements), w.QueuedElements < workCount
	for id, fw := range w.Flight {
		rec := d.inflight[id]
		switch {
		case rec == nil:
			pieces++
		case splittable && rec.rate.hasRemaining:
			pieces += max(1, int(min(math.Ceil(rec.rate.remaining), workCount)))
		case splittable:
			pieces += workCount // not reported yet: it may split into many
		default:
			left := min(max(fw.Elements-int(rec.rate.in)+1, 0), fw.Elements)
			pieces += max(1, left)
			elems += float64(left)
			if fw.Elements > 0 && fw.Elements < workCount {
				bytes += float64(fw.Bytes) * float64(left) / float64(fw.Elements)
			} else {
				bytes, exact = bytes+float64(fw.Bytes), false
			}
		}
	}
	st.MaxParallel, st.Blocked = min(pieces, workCount), w.Blocked && len(w.Flight) == 0
	switch {
	case len(st.Inputs) == 0:
		st.Backlog.Elements = max(st.Backlog.Elements, float64(pieces))
	case exact:
		st.Pending = autoscale.Amount{Elements: elems}
	default:
		st.Pending = autoscale.Amount{Bytes: bytes}
	}
}
