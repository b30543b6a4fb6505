package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// TimerStream names the timers of one family of one transform.
type TimerStream struct{ Transform, Family string }

// TimerSpec describes one timer family of a stateful stage.
type TimerSpec struct {
	Stream     TimerStream
	Codec      *coders.TimerCodec
	Processing bool // processing-time domain; else event time
	// Expiry marks an OnWindowExpiration family: the engine sets one of
	// its timers for each key and window with input (expiry.go).
	Expiry bool
}

// keyed is the state of a stateful stage: input and timers by key, and the
// keys a bundle in flight owns, so each key is processed by one bundle at
// a time, in order.
type keyed struct {
	pending map[string]*keyWork
	busy    map[string]bool
	timers  map[string]*timer // by identity: stream, key, windows, tag
	// sorted is a time-sorted stage's input not yet released, by key.
	sorted map[string]*sortBuffer
	// windows are the (key, window) pairs that may hold state, until the
	// watermark passes the window's end plus the allowed lateness.
	windows map[string]*StateWindow
	// scannedAt is the input watermark of the last expiry scan; rescan is
	// set when keys were released since.
	scannedAt int64
	rescan    bool
	// ranEarly are the processing-time timers fired before their time
	// because the stage's input was complete (due): one set again by its
	// own callback waits for its time, so a timer that re-arms itself
	// cannot loop at once forever.
	ranEarly map[string]bool
}

// StateWindow is one key's window of a stateful stage. Once it expires
// its state is garbage: see Ready.Expired.
type StateWindow struct {
	Stage       string
	Key, Window []byte
	maxTS       int64
}

type keyWork struct {
	data  []byte
	minTS int64
}

type timer struct {
	id         string
	stream     TimerStream
	key        string
	windows    string // the windows it is set in, encoded back to back
	fire, hold int64
	processing bool
	enc        []byte // the timer as the SDK encoded it, redelivered as is
}

func newKeyed() *keyed {
	return &keyed{pending: map[string]*keyWork{}, busy: map[string]bool{}, timers: map[string]*timer{}, windows: map[string]*StateWindow{}, sorted: map[string]*sortBuffer{},
		scannedAt: coders.MinTimestamp, ranEarly: map[string]bool{}}
}

// enqueueKeyed takes a stateful stage's arriving input: filed under
// their encoded keys, or first buffered for sorting (sorted.go).
func (e *Engine) enqueueKeyed(st *stage, p *pcoll, c []byte) {
	if p.spec.Key == nil {
		e.fail(fmt.Errorf("stage %s: stateful input %s is not KV-coded", st.spec.ID, p.id))
		return
	}
	if st.spec.TimeSorted {
		e.bufferSorted(st, p, c)
		return
	}
	e.fileKeyed(st, p, c)
}

// fileKeyed files elements under their encoded keys, ready to run.
func (e *Engine) fileKeyed(st *stage, p *pcoll, c []byte) {
	if p.spec.Key == nil {
		e.fail(fmt.Errorf("stage %s: stateful input %s is not KV-coded", st.spec.ID, p.id))
		return
	}
	err := coders.EachRaw(c, p.spec.Codec, func(v *coders.WindowedValue, raw []byte) error {
		kn, err := p.spec.Key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		k := string(v.Elem[:kn])
		w := st.keyed.pending[k]
		if w == nil {
			w = &keyWork{minTS: v.Timestamp}
			st.keyed.pending[k] = w
		}
		w.data = append(w.data, raw...)
		w.minTS = min(w.minTS, v.Timestamp)
		return coders.EachWindow(p.spec.Codec, v, func(win []byte) error {
			sw, err := st.keyed.track(st.spec.ID, k, win, p.spec.Codec.WindowKind())
			if sw != nil {
				st.armExpiry(sw, p.spec.Codec.WindowKind())
			}
			return err
		})
	})
	if err != nil {
		e.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, p.id, err))
	}
}

// setTimers applies the timers a bundle set or cleared; the latest setting
// of a timer wins, so it is never delivered twice.
func (e *Engine) setTimers(st *stage, out map[TimerStream][][]byte) error {
	for _, ts := range st.spec.Timers {
		for _, c := range out[ts.Stream] {
			if err := e.parseTimers(st, ts, c); err != nil {
				return fmt.Errorf("stage %s: timers of %s/%s: %w", st.spec.ID, ts.Stream.Transform, ts.Stream.Family, err)
			}
		}
	}
	return nil
}

func (e *Engine) parseTimers(st *stage, ts TimerSpec, c []byte) error {
	var t coders.Timer
	for off := 0; off < len(c); {
		n, err := ts.Codec.Parse(c[off:], &t)
		if err != nil {
			return err
		}
		raw := c[off : off+n : off+n]
		off += n
		id := timerID(ts.Stream, &t)
		if t.Clear {
			delete(st.keyed.timers, id)
			continue
		}
		st.keyed.timers[id] = &timer{
			id: id, stream: ts.Stream, key: string(t.Key), windows: string(t.Windows), fire: t.Fire, hold: t.Hold,
			processing: ts.Processing, enc: raw,
		}
	}
	return nil
}

// due reports whether a timer may fire at the stage's input watermark and
// the engine's processing time. Event-time timers fire once the watermark
// passes them (at the end of time, all of them do), but never before the
// key's pending input at or before their time: the stage's input watermark
// is held by input it has not processed, which may still reset or clear
// the timer (Java's watermark manager holds it the same way).
//
// Processing-time timers fire when processing time reaches them, or at
// once when the stage's input is complete (a batch pipeline's, a finished
// TestStream's, a drained job's): nothing they wait for can arrive, and
// waiting would hold the job for wall-clock time (Deduplicate's
// ten-minute expiry) or, in TestStream's virtual time, forever. They
// fire rather than being dropped, as Flink and Dataflow do at the end of
// bounded input, since a callback may emit what it buffered.
func (e *Engine) due(st *stage, t *timer) bool {
	if t.processing {
		return t.fire <= e.now || (st.inWM >= coders.MaxTimestamp && !st.keyed.ranEarly[t.id])
	}
	if w := st.keyed.pending[t.key]; w != nil && w.minTS <= t.fire {
		return false
	}
	return t.fire < st.inWM || st.inWM >= coders.MaxTimestamp
}

// readyKeyed cuts bundles for a stateful stage: each free key with pending
// input (when the stage may run) or due timers goes to one bundle, keys
// spread over at most n bundles. Per key only the earliest due timers are
// delivered, so timers fire in timestamp order even when firing one sets
// an earlier one.
func (e *Engine) readyKeyed(st *stage, n int) []*bundle {
	e.releaseSorted(st)
	runInput := e.canRun(st)
	work := map[string][]*timer{}
	for _, t := range st.keyed.timers {
		if !st.keyed.busy[t.key] && e.due(st, t) {
			work[t.key] = earliest(work[t.key], t)
		}
	}
	var keys []string
	for k := range work {
		keys = append(keys, k)
	}
	if runInput {
		for k := range st.keyed.pending {
			if _, ok := work[k]; !ok && !st.keyed.busy[k] {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	bundles := make([]*bundle, 0, n)
	for i, k := range keys {
		if i < n {
			bundles = append(bundles, e.newBundle(st))
		}
		e.addKey(st, bundles[i%n], k, runInput, work[k])
	}
	return bundles
}

// earliest keeps the timers with the smallest firing time.
func earliest(cur []*timer, t *timer) []*timer {
	if len(cur) == 0 || t.fire < cur[0].fire {
		return []*timer{t}
	}
	if t.fire == cur[0].fire {
		return append(cur, t)
	}
	return cur
}

func (e *Engine) addKey(st *stage, b *bundle, k string, withInput bool, timers []*timer) {
	st.keyed.busy[k] = true
	b.Keys = append(b.Keys, k)
	if w := st.keyed.pending[k]; w != nil && withInput {
		b.Input = append(b.Input, w.data)
		b.minTS = min(b.minTS, w.minTS)
		delete(st.keyed.pending, k)
	}
	sort.Slice(timers, func(i, j int) bool { return timers[i].id < timers[j].id })
	for _, t := range timers {
		if b.Timers == nil {
			b.Timers = map[TimerStream][]byte{}
		}
		b.Timers[t.stream] = append(b.Timers[t.stream], t.enc...)
		b.minTS = min(b.minTS, t.hold, t.fire)
		if t.processing && t.fire > e.now {
			st.keyed.ranEarly[t.id] = true
		}
		delete(st.keyed.timers, t.id)
	}
}

// keyedWatermark holds the output at pending input and timer holds.
func (e *Engine) keyedWatermark(st *stage, wm int64) int64 {
	for _, w := range st.keyed.pending {
		wm = min(wm, w.minTS)
	}
	for _, b := range st.keyed.sorted {
		wm = min(wm, b.minTS)
	}
	for _, t := range st.keyed.timers {
		wm = min(wm, t.hold)
	}
	return wm
}

// nextTimerWakeup is the earliest processing-time timer of the stage due
// after now.
func (st *stage) nextTimerWakeup(now int64) (int64, bool) {
	if st.keyed == nil {
		return 0, false
	}
	at, ok := int64(0), false
	for _, t := range st.keyed.timers {
		if t.processing && t.fire > now && (!ok || t.fire < at) {
			at, ok = t.fire, true
		}
	}
	return at, ok
}

// hasTimers reports whether the stage still has timers set.
func (st *stage) hasTimers() bool { return st.keyed != nil && len(st.keyed.timers) > 0 }

// timerID is a timer's identity: a timer set again with the same one
// replaces it.
func timerID(s TimerStream, t *coders.Timer) string {
	return s.Transform + "\x00" + s.Family + "\x00" + string(t.Key) + "\x00" + string(t.Windows) + "\x00" + string(t.Tag)
}

// track remembers that a key's window may hold state, and returns the
// window if it is new.
func (k *keyed) track(stage, key string, win []byte, kind coders.WindowKind) (*StateWindow, error) {
	id := key + "\x00" + string(win)
	if _, ok := k.windows[id]; ok {
		return nil, nil
	}
	maxTS := coders.EndOfGlobalWindow
	if kind != coders.GlobalWindow {
		_, ts, err := coders.WindowBounds(kind, win)
		if err != nil {
			return nil, fmt.Errorf("window of key: %w", err)
		}
		maxTS = ts
	}
	sw := &StateWindow{Stage: stage, Key: []byte(key), Window: append([]byte(nil), win...), maxTS: maxTS}
	k.windows[id] = sw
	return sw, nil
}

// expire moves the windows whose end plus allowed lateness the input
// watermark has passed, and whose key no bundle owns, to e.expired.
func (e *Engine) expire(st *stage) {
	if st.keyed == nil || len(st.keyed.windows) == 0 {
		return
	}
	if st.inWM <= st.keyed.scannedAt && !st.keyed.rescan {
		return // nothing could have expired since the last scan
	}
	st.keyed.scannedAt, st.keyed.rescan = st.inWM, false
	for id, w := range st.keyed.windows {
		if st.keyed.busy[string(w.Key)] || st.keyed.pending[string(w.Key)] != nil || st.keyed.sorted[string(w.Key)] != nil {
			continue
		}
		if gc := w.maxTS + st.spec.AllowedLateness; gc < st.inWM || st.inWM >= coders.MaxTimestamp {
			if !st.keyed.hasTimersFor(string(w.Key), string(w.Window), e.pcolls[st.spec.Inputs[0]].spec.Codec.WindowKind()) {
				e.expired = append(e.expired, *w)
				delete(st.keyed.windows, id)
			}
		}
	}
}

// hasTimersFor reports whether a timer of the key is set in the window,
// of kind, whose state it may still read. (A timer set in several windows
// counts for each; one whose windows merely contain the window's bytes
// only delays the window's expiry.) Timers name a custom window without
// the max timestamp the state's window has (timerWindow).
func (k *keyed) hasTimersFor(key, win string, kind coders.WindowKind) bool {
	if kind == coders.CustomWindows && len(win) >= coders.TimestampSize {
		win = win[coders.TimestampSize:]
	}
	for _, t := range k.timers {
		if t.key == key && strings.Contains(t.windows, win) {
			return true
		}
	}
	return false
}

// takeExpired returns, and forgets, the windows whose state is garbage:
// the watermark passed their end plus the allowed lateness, and no input
// or timer of their key is left.
func (e *Engine) takeExpired() []StateWindow {
	out := e.expired
	e.expired = nil
	sort.Slice(out, func(i, j int) bool {
		if string(out[i].Key) != string(out[j].Key) {
			return string(out[i].Key) < string(out[j].Key)
		}
		return string(out[i].Window) < string(out[j].Window)
	})
	return out
}
