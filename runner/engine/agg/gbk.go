package agg

import (
	"errors"
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
)

var errGlobalWindowBytes = errors.New("global window must encode as zero bytes")

// Pane is one firing of one (key, window): the grouped values and where they
// go in event time. Key, Window and Values alias memory the GBK owns but
// never modifies again, so a Pane stays valid after later calls.
type Pane struct {
	Key, Window []byte // encoded
	Values      [][]byte
	Timestamp   int64
	Info        coders.PaneInfo
}

// GBK is the state machine of one GroupByKey. It is not safe for concurrent
// use; one driver goroutine owns it.
//
// Ordering contract: Fire returns panes in the order they were produced.
// Panes produced by one Add come first-to-last for that element; panes
// produced by one EndInput come in the order the batch reached their
// windows; panes
// produced by one AdvanceWatermark or AdvanceProcessingTime are ordered by
// the time that woke the window, then window bytes (for interval windows:
// window end), then key bytes. Panes of one (key, window) are always in
// index order.
type GBK struct {
	s       settings
	wm, now int64 // input watermark, processing time

	wins     map[string]*winState   // by id (window + key)
	sessions map[string][]*winState // merging only: open windows by key
	open     int                    // windows that may still emit

	eventTimers timerHeap // end-of-window, then garbage-collection
	procTimers  timerHeap

	out          []Pane
	droppedLate  int64
	droppedClose int64
	scratch      []byte

	holdCache int64
	holdValid bool

	fast *batch // the default-trigger fast path, when the config allows it

	winMerges *sdkWindowMerges // windows the SDK merges (sdkmerge.go), or nil

	// deferring is set between BeginInput and EndInput; dirty are the
	// windows elements reached meanwhile, in first-touched order.
	deferring bool
	dirty     []*winState
}

// New returns a GBK for cfg, or an error naming what it does not support.
func New(cfg Config) (*GBK, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	g := &GBK{
		s:        s,
		wm:       coders.MinTimestamp,
		now:      coders.MinTimestamp,
		wins:     map[string]*winState{},
		sessions: map[string][]*winState{},
	}
	if cfg.Merging && cfg.SDKWindowMerge {
		g.winMerges = &sdkWindowMerges{dirty: map[string]bool{}, wantWM: coders.MinTimestamp, askedWM: coders.MinTimestamp}
	}
	if batchEligible(&g.s, cfg) && !cfg.noFastPath {
		g.fast = newBatch(&g.s)
		if cfg.Spill != nil {
			g.fast.spill = &spiller{sp: cfg.Spill, budget: max(cfg.SpillBudget, 0),
				hot: cfg.Hot, hotPrefix: cfg.HotPrefix, hotBytes: max(cfg.HotBytes, 0)}
		}
		if cfg.Combine != nil {
			g.fast.tree = newTree(*cfg.Combine, cfg.Spill != nil, cfg.SpillBudget)
		}
	}
	return g, nil
}

// Add buffers one value of one element in one window (callers explode
// elements in several windows). ts is the element's event time;
// processingTime is when it arrived (raised to the GBK's processing time if
// behind it); processing-time triggers measure their delay from it.
//
// The value is dropped and counted if its window expired (its end plus the
// allowed lateness is behind the input watermark: DroppedLate) or its
// trigger already finished (DroppedClosed). Key, window and value are
// copied. The error reports a malformed window.
func (g *GBK) Add(key, window, value []byte, ts, processingTime int64) error {
	return g.AddShared(key, window, value, ts, processingTime)
}

// AddShared is Add: both paths copy what they keep (the batch path into
// its blocks, batch.go), so nothing of the caller's input stays pinned.
func (g *GBK) AddShared(key, window, value []byte, ts, processingTime int64) error {
	start, maxTS, err := g.s.windowBounds(window)
	if err != nil {
		return fmt.Errorf("agg: bad window %x: %w", window, err)
	}
	if g.s.gcTime(maxTS) < g.wm {
		g.droppedLate++
		return nil
	}
	if g.fast != nil {
		g.holdValid = false
		g.fast.add(key, window, value, ts, g.wm, maxTS)
		return g.Err()
	}
	if g.winMerges != nil {
		g.addWaiting(key, window, value, ts, processingTime)
		return nil
	}
	var w *winState
	if g.s.merging {
		w = g.session(key, start, maxTS)
	} else {
		w = g.lookup(key, window, start, maxTS)
	}
	if w.closed {
		g.droppedClose++
		return nil
	}
	g.holdValid = false
	now := max(g.now, processingTime)
	g.addTo(w, value, ts, env{wm: g.wm, now: now, arrival: now, maxTS: w.maxTS})
	return nil
}

func (g *GBK) addTo(w *winState, value []byte, ts int64, e env) {
	w.appendValue(value)
	g.addHold(w, ts)
	root := g.s.trig.root
	onElement(root, w.trig, e)
	if g.deferring {
		if !w.dirty {
			w.dirty = true
			g.dirty = append(g.dirty, w)
		}
		return
	}
	if shouldFire(root, w.trig, e) {
		g.fire(w, e)
	}
	g.schedule(w)
}

// BeginInput starts a batch of input: until EndInput, Add only records
// elements, and triggers are asked whether to fire once per window at
// EndInput, as Java's ReduceFnRunner.processElements does after each bundle
// of a key's input. Outside a batch each Add is a batch of one.
func (g *GBK) BeginInput() { g.deferring = true }

// EndInput ends a batch of input, firing the windows it reached whose
// triggers are ready, in the order the batch first reached them.
func (g *GBK) EndInput() {
	g.deferring = false
	for _, w := range g.dirty {
		w.dirty = false
		if w.dead || w.closed {
			continue
		}
		e := env{wm: g.wm, now: g.now, arrival: g.now, maxTS: w.maxTS}
		if shouldFire(g.s.trig.root, w.trig, e) {
			g.fire(w, e)
		}
		g.schedule(w)
	}
	clear(g.dirty)
	g.dirty = g.dirty[:0]
}

// AdvanceWatermark moves the input watermark forward (earlier values are
// ignored) and runs the end-of-window and garbage-collection work it makes
// due. Advancing to coders.MaxTimestamp flushes and collects every window.
// While windows wait for the SDK to merge them, the GBK keeps its watermark
// and moves it in ApplyWindowMerges.
func (g *GBK) AdvanceWatermark(wm int64) {
	if g.winMerges != nil {
		g.winMerges.wantWM = max(g.winMerges.wantWM, wm)
		if g.winMerges.busy() {
			return
		}
	}
	g.advance(wm)
}

func (g *GBK) advance(wm int64) {
	if wm <= g.wm {
		return
	}
	g.wm = wm
	g.holdValid = false
	if g.fast != nil {
		g.fast.advance(wm)
		return
	}
	due := func(at int64) bool { return at < wm }
	for {
		t, ok := g.eventTimers.popDue(due, liveEvent)
		if !ok {
			return
		}
		g.onEventTimer(t.w)
	}
}

// AdvanceProcessingTime moves processing time forward (earlier values are
// ignored) and fires the processing-time triggers that are due.
func (g *GBK) AdvanceProcessingTime(now int64) {
	if now <= g.now {
		return
	}
	g.now = now
	g.holdValid = false
	due := func(at int64) bool { return at <= now }
	for {
		t, ok := g.procTimers.popDue(due, liveProc)
		if !ok {
			return
		}
		w := t.w
		w.ptSet = false
		e := env{wm: g.wm, now: now, arrival: now, maxTS: w.maxTS}
		if shouldFire(g.s.trig.root, w.trig, e) {
			g.fire(w, e)
		}
		g.schedule(w)
	}
}

// Err reports a failure of the GBK's Spill: the panes it returned since
// are incomplete, and the job must fail.
func (g *GBK) Err() error {
	if g.fast != nil && g.fast.spill != nil {
		return g.fast.spill.err
	}
	return nil
}

// Fire returns the panes produced since the last call, in the order
// described on GBK.
func (g *GBK) Fire() []Pane {
	if g.fast != nil {
		return g.fast.panes()
	}
	out := g.out
	g.out = nil
	return out
}

// FireEncoded is Fire with the panes encoded as GroupByKey output elements
// (see AppendPane), in chunks of whole elements of about max bytes (a
// larger pane gets a chunk of its own).
func (g *GBK) FireEncoded(max int) [][]byte {
	var out [][]byte
	g.FireEncodedTo(max, func(c []byte) { out = append(out, c) })
	return out
}

// FireEncodedTo is FireEncoded handing each chunk to emit as it is made:
// the default-trigger path then reads spilled windows back a piece at a
// time instead of materialising a window's whole output.
func (g *GBK) FireEncodedTo(max int, emit func([]byte)) {
	if g.fast != nil {
		g.fast.emitPanes(max, emit)
		return
	}
	var cur []byte
	for _, p := range g.Fire() {
		if len(cur) > 0 && len(cur) >= max {
			emit(cur)
			cur = nil
		}
		cur = AppendPane(cur, p)
	}
	if len(cur) > 0 {
		emit(cur)
	}
}

// FireEncodedUpTo is FireEncodedTo stopping once about budget bytes of
// panes were emitted (a pane is never cut): the default-trigger path then
// hands out a large window's output as its readers consume it, instead of
// holding it twice, as input and as output. The rest stays due (Due) and
// holds the GBK's output watermark (Hold). Other paths emit everything.
func (g *GBK) FireEncodedUpTo(max, budget int, emit func([]byte)) {
	if g.fast == nil {
		g.FireEncodedTo(max, emit)
		return
	}
	g.fast.emitPanesUpTo(max, budget, emit)
	g.holdValid = false
}

// Due reports whether fired panes wait to be emitted.
func (g *GBK) Due() bool {
	if g.fast != nil {
		return len(g.fast.due) > 0
	}
	return len(g.out) > 0
}

// NextProcessingTimeWakeup is the earliest processing time at which a
// processing-time trigger may fire; ok is false when none is armed.
func (g *GBK) NextProcessingTimeWakeup() (at int64, ok bool) {
	t, ok := g.procTimers.peekLive(liveProc)
	return t.at, ok
}

// Done reports that no window can emit anything any more and every pane has
// been taken by Fire.
func (g *GBK) Done() bool {
	if g.fast != nil {
		return g.fast.done()
	}
	return g.open == 0 && len(g.out) == 0 && (g.winMerges == nil || !g.winMerges.busy())
}

// Watermark is the current input watermark.
func (g *GBK) Watermark() int64 { return g.wm }

// DroppedLate counts values dropped because their window had expired.
func (g *GBK) DroppedLate() int64 { return g.droppedLate }

// DroppedClosed counts values dropped because their window's trigger had
// finished.
func (g *GBK) DroppedClosed() int64 { return g.droppedClose }

// lookup finds or creates a non-merging window.
func (g *GBK) lookup(key, window []byte, start, maxTS int64) *winState {
	g.scratch = appendID(g.scratch[:0], window, key)
	if w := g.wins[string(g.scratch)]; w != nil {
		return w
	}
	return g.create(key, window, start, maxTS)
}

func appendID(dst, window, key []byte) []byte {
	dst = coders.AppendUvarint(dst, uint64(len(window)))
	return append(append(dst, window...), key...)
}

// create registers a new open window and its first event-time timer.
func (g *GBK) create(key, window []byte, start, maxTS int64) *winState {
	w := &winState{
		key:   append([]byte(nil), key...),
		win:   append([]byte(nil), window...),
		start: start,
		maxTS: maxTS,
		trig:  make([]nstate, g.s.trig.size),
	}
	w.id = string(appendID(nil, w.win, w.key))
	w.eowDone = g.wm > maxTS
	// A window born after its end can never have an on-time pane (Python's
	// driver and Java's isLateForOutput agree on this case).
	w.lateBirth = w.eowDone
	g.wins[w.id] = w
	g.open++
	g.scheduleEvent(w)
	return w
}

func (g *GBK) scheduleEvent(w *winState) {
	if w.eowDone {
		g.eventTimers.add(g.s.gcTime(w.maxTS), w, w.gen)
	} else {
		g.eventTimers.add(w.maxTS, w, w.gen)
	}
}

// schedule (re)arms the processing-time wakeup of w. A wakeup not after the
// current processing time is not queued: the trigger was already asked at
// that time, and asking again at the same time cannot change its answer.
func (g *GBK) schedule(w *winState) {
	if w.closed || w.dead {
		return
	}
	at, ok := wakeup(w.trig)
	if !ok || at <= g.now {
		w.ptSet = false
		return
	}
	if w.ptSet && w.ptAt == at {
		return
	}
	w.ptGen++
	w.ptAt, w.ptSet = at, true
	g.procTimers.add(at, w, w.ptGen)
}

func liveEvent(t timer) bool { return !t.w.dead && t.gen == t.w.gen }

func liveProc(t timer) bool {
	w := t.w
	return !w.dead && !w.closed && w.ptSet && t.gen == w.ptGen && t.at == w.ptAt
}

// onEventTimer handles the watermark passing a window's end or its
// garbage-collection time.
func (g *GBK) onEventTimer(w *winState) {
	if g.wm > g.s.gcTime(w.maxTS) {
		g.collect(w)
		return
	}
	w.eowDone = true
	if !w.closed {
		e := env{wm: g.wm, now: g.now, arrival: g.now, maxTS: w.maxTS}
		if shouldFire(g.s.trig.root, w.trig, e) {
			g.fire(w, e)
		}
		g.schedule(w)
	}
	g.scheduleEvent(w)
}
