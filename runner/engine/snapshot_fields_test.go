package engine

import (
	"reflect"
	"testing"

	"github.com/beam-runner/beam-runner/runner/engine/internal/fieldcheck"
)

// snapshotFields lists, per type whose state Snapshot writes, the fields
// it knows about: written, derived from the spec, or empty at a
// consistent point. A field added to one of these types fails this test
// until snapshot.go handles it (and SnapshotVersion is bumped if the
// format changes), so new state is never silently left out of checkpoints.
// Engine.flow is written field by field. flow.pend is scratch made from the spec (a restored engine starts with
// its pending input in memory); a chunk's spill fields are resolved by
// Snapshot, which writes spilled data itself, so the format is unchanged.
// stage.probe is policy made from the spec: a restored stage probes its
// concurrency afresh. Engine.splits are requests about bundles in flight
// for the driver's next Ready, and Engine.out bundles in flight; a
// snapshot holds no bundle in flight.
// stage.combines, a GroupByKey's combines waiting to start, are written
// back into its section uncombined (combtree.go), as its combines in flight are.
// stage.waiting, input waiting for its side input windows, is written
// as pending input, which a restored engine sorts again (sidegate.go);
// stage.sideWMs only saves sorting it again before a watermark moves.
// stage.fc is flow control's soft state (flowctl.go): a restored stage
// measures its rate afresh, its holds follow from its restored input, and
// its pressure counts from the restore.
// keyed.pendingBytes is summed again as pending is restored. keyed.cfg is made from the spec; keyed.laneTurn only spreads turns
// fairly, and a restored stage may start at any lane. A timer's windows are parsed again from its encoding on restore. A sort
// buffer's minTS and seq are rebuilt as its elements are added back in
// arrival order.
var snapshotFields = map[reflect.Type]string{
	reflect.TypeOf(Engine{}):      "flow nextID draining flight retries splits out inv", // inv: the invariant checks' memory, not state
	reflect.TypeOf(flow{}):        "spec stages pcolls now err expired pend",
	reflect.TypeOf(stage{}):       "spec probe outWM inWM pending flight gbk events emitted keyed delayed combines waiting sideWMs fc",
	reflect.TypeOf(pcoll{}):       "id spec wm consumers sides data windowMergeFor fromGBK", // windowMergeFor, fromGBK: from the spec
	reflect.TypeOf(keyed{}):       "cfg pending pendingBytes busy timers windows scannedAt rescan ranEarly sorted laneTurn",
	reflect.TypeOf(timer{}):       "id stream key windows fire hold processing enc",
	reflect.TypeOf(keyWork{}):     "data minTS",
	reflect.TypeOf(sortBuffer{}):  "elems minTS seq",
	reflect.TypeOf(sortedElem{}):  "ts seq raw",
	reflect.TypeOf(chunk{}):       "data minTS mem spillKey size",
	reflect.TypeOf(delayed{}):     "data readyAt hold",
	reflect.TypeOf(StateWindow{}): "Stage Key Window maxTS",
}

func TestSnapshotCoversEveryField(t *testing.T) {
	fieldcheck.Check(t, snapshotFields, "the engine snapshot", "snapshot.go")
}
