package agg

import (
	"reflect"
	"testing"

	"github.com/beam-runner/beam-runner/runner/engine/internal/fieldcheck"
)

// snapshotFields lists, per type whose state Snapshot writes, the fields
// it knows about: written, derived from the Config, caches rebuilt on
// demand, or empty when a snapshot may be taken. A new field fails this
// test until snapshot.go handles it (bumping snapshotVersion if the format
// changes), so new GBK state is never silently left out of checkpoints.
var snapshotFields = map[reflect.Type]string{
	reflect.TypeOf(GBK{}):      "s wm now wins sessions open eventTimers procTimers out droppedLate droppedClose scratch holdCache holdValid fast deferring dirty winMerges", // winMerges: refused while busy, rebuilt by New otherwise
	reflect.TypeOf(winState{}): "key win id start maxTS gen data ends newCount hold hasHold index nonEarly lateBirth eowDone ptAt ptSet ptGen closed dead trig dirty",
	reflect.TypeOf(nstate{}):   "count at armed finished late",
	reflect.TypeOf(timer{}):    "at w gen",
	// spill: the store handle, given by the config; tree: made from the
	// config, its combines in flight refused, its load a policy's measure
	// that starts afresh; wm: the GBK's.
	reflect.TypeOf(batch{}): "s wins due pending spill tree wm",
	// next: restored as the count; spilled: refused; inflight: zero
	// without combines in flight; blk, runs: saved as one list;
	// iter, readFrom, memGroup: only due windows, which are never saved.
	reflect.TypeOf(batchWin{}):  "win maxTS hold blk runs next spilled iter readFrom memGroup inflight",
	reflect.TypeOf(batchElem{}): "prefix key value out held",
}

func TestSnapshotCoversEveryField(t *testing.T) {
	fieldcheck.Check(t, snapshotFields, "the GBK snapshot", "snapshot.go")
}
