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
// busy seconds by the stage's measured rate. A streaming job's stages
// count the same input left as a backlog in the runner.

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
	left := d.leftWork(splittable, w)
	st.MaxParallel, st.Blocked = min(left.pieces, workCount), w.Blocked && len(w.Flight) == 0
	if len(st.Inputs) == 0 {
		st.Backlog.Elements = max(st.Backlog.Elements, float64(left.pieces))
		return
	}
	st.Pending = left.amount()
}

// streamWork sets a streaming stage's pending input: what waits in the
// runner for it and what its running bundles took but have not reached
// (the policy works it off over the catch-up time). A source's input is
// restrictions: it has none.
func (d *driver) streamWork(st *autoscale.StageInput, splittable bool, w engine.StageWork) {
	if len(st.Inputs) > 0 {
		st.Pending = d.leftWork(splittable, w).amount()
	}
}

// work is a stage's input left to process: elements (exact when every
// count was), bytes, and the pieces it could run as.
type work struct {
	elems, bytes float64
	exact        bool
	pieces       int
}

// amount is the work in elements when exact, else in bytes.
func (w work) amount() autoscale.Amount {
	if w.exact {
		return autoscale.Amount{Elements: w.elems}
	}
	return autoscale.Amount{Bytes: w.bytes}
}

// leftWork is a stage's queued input and what its running bundles have
// yet to take of theirs, by their progress.
func (d *driver) leftWork(splittable bool, w engine.StageWork) work {
	out := work{bytes: float64(w.QueuedBytes), pieces: w.Pieces,
		elems: float64(w.QueuedElements), exact: w.QueuedElements < workCount}
	for id, fw := range w.Flight {
		rec := d.inflight[id]
		switch {
		case rec == nil:
			out.pieces++
		case splittable && rec.rate.hasRemaining:
			out.pieces += max(1, int(min(math.Ceil(rec.rate.remaining), workCount)))
		case splittable:
			out.pieces += workCount // not reported yet: it may split into many
		default:
			left := min(max(fw.Elements-int(rec.rate.in)+1, 0), fw.Elements)
			out.pieces += max(1, left)
			out.elems += float64(left)
			if fw.Elements > 0 && fw.Elements < workCount {
				out.bytes += float64(fw.Bytes) * float64(left) / float64(fw.Elements)
			} else {
				out.bytes, out.exact = out.bytes+float64(fw.Bytes), false
			}
		}
	}
	return out
}
