package autoscale

// The guard against under-reported busy time (FLINK-33306): a stage whose
// SDK-reported busy time is below suspectBusyPerSlot ms per second per
// slot (1%) while at least suspectMinElements went through it in the
// window claims a processing rate at least 100 times what each slot is
// observed doing; its figure is not trusted (see busy).
const (
	suspectBusyPerSlot = 10
	suspectMinElements = 100
	// holdingSaturated is the share of the window a stage must have held
	// its upstream to count as saturated.
	holdingSaturated = 0.5
)

// Busy sources, as Rates.BusySource names them.
const (
	BusySDK       = "sdk"
	BusyRunner    = "runner"
	BusyFallback  = "runner (sdk busy time under-reported)"
	BusySaturated = "saturated (sdk busy time under-reported; holding its upstream)"
	BusySuspect   = "sdk (under-reported, no better figure)"
)

// Rates is what a stage's window says, as DS2 and Flink define the
// figures. Counts are prorated sums over the window; rates are per second.
type Rates struct {
	WallMs            int64
	In, Out           float64
	BytesIn, BytesOut float64
	OutByPCollection  map[string]float64
	BusyMs            float64
	BusySource        string
	// ProcessingRate is DS2's true processing rate λp: input elements per
	// second of useful time, i.e. what one busy bundle slot processes.
	ProcessingRate float64
	// OutputRate is DS2's true output rate λo: output elements per second
	// of useful time. A source stage is sized by it.
	OutputRate float64
	// Selectivity is λo/λp = Out/In (0 when nothing came in).
	Selectivity float64
	// ObservedIn and ObservedOut are elements per second of wall time.
	ObservedIn, ObservedOut float64
	// StageBusyMsPerSec is the stage's busy time per wall second summed
	// over its bundles, so above 1000 with parallel bundles. Busy and idle
	// divide by the slots the caller passed; back-pressured is the time
	// the stage was held per wall second (holding all its slots at once),
	// at most what busy leaves, so busy + idle + back-pressured = 1000 as
	// in Flink.
	StageBusyMsPerSec                                 float64
	BusyMsPerSec, IdleMsPerSec, BackPressuredMsPerSec float64
	// HoldingMsPerSec is time per wall second the stage's input was over
	// its bound, holding its upstream (not per slot).
	HoldingMsPerSec float64
}

// Rates derives the stage's rates over the window ending at nowMs. slots
// is how many bundles the stage could run at once during the window
// (its parallelism across its workers; 1 if less): the per-slot triple
// divides by it. It also drops the samples that have left the window.
func (w *Window) Rates(nowMs int64, slots int) Rates {
	start := nowMs - w.LengthMs
	if w.seen && w.sinceMs > start {
		start = w.sinceMs
	}
	w.evict(nowMs - w.LengthMs)
	r := Rates{WallMs: max(nowMs-start, 0)}
	if !w.seen || r.WallMs == 0 {
		r.IdleMsPerSec = 1000
		return r
	}
	t := w.totals(start, nowMs)
	slots = max(slots, 1)
	r.In, r.Out, r.BytesIn, r.BytesOut = t.in, t.out, t.bytesIn, t.bytesOut
	r.OutByPCollection = t.outBy
	r.BusyMs, r.BusySource = busy(t, float64(r.WallMs), slots)
	r.derive(t, slots)
	return r
}

// busy chooses the stage's useful time: the SDK's and the runner's
// figures as reported, unless the SDK's is under-reported (the guard
// above). Then the stage counts as saturated (busy the whole window on
// every slot) when it held its upstream for half the window or more, else
// the runner-side estimate is used when larger.
func busy(t totals, wallMs float64, slots int) (float64, string) {
	b := t.busySDK + t.busyRunner
	src := BusyRunner
	switch {
	case b == 0:
		src = ""
	case t.busySDK >= t.busyRunner:
		src = BusySDK
	}
	if src != BusySDK || max(t.in, t.out) < suspectMinElements ||
		b*1000/wallMs/float64(slots) >= suspectBusyPerSlot {
		return b, src
	}
	if t.holding >= holdingSaturated*wallMs {
		return wallMs * float64(slots), BusySaturated
	}
	if t.runnerBusy > b {
		return t.runnerBusy, BusyFallback
	}
	return b, BusySuspect
}

func (r *Rates) derive(t totals, slots int) {
	secs := float64(r.WallMs) / 1000
	if r.BusyMs > 0 {
		r.ProcessingRate = r.In / (r.BusyMs / 1000)
		r.OutputRate = r.Out / (r.BusyMs / 1000)
	}
	if r.In > 0 {
		r.Selectivity = r.Out / r.In
	}
	r.ObservedIn, r.ObservedOut = r.In/secs, r.Out/secs
	r.StageBusyMsPerSec = r.BusyMs / secs
	perSlot := func(ms float64) float64 { return min(ms/secs/float64(slots), 1000) }
	r.BusyMsPerSec = perSlot(r.BusyMs)
	// Held time is the stage's, not a slot's: flow control holds all its
	// slots at once (Flink's back-pressured time per wall second).
	r.BackPressuredMsPerSec = min(t.backPressured/secs, 1000, 1000-r.BusyMsPerSec)
	r.IdleMsPerSec = 1000 - r.BusyMsPerSec - r.BackPressuredMsPerSec
	r.HoldingMsPerSec = min(t.holding/secs, 1000)
}
