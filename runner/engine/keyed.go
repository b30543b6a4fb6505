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

// keyed is the keyed-state and timer machinery of a stateful stage: input
// and timers by key, and the keys a bundle in flight owns, so each key is
// processed by one bundle at a time, in order. It knows its stage only by
// cfg; the engine hands it the times it decides by (the stage's input
// watermark, processing time) and cuts its bundles.
type keyed struct {
	cfg     keyedConfig
	pending map[string]*keyWork
	// pendingBytes is the bytes of input in pending, for flow control.
	pendingBytes int64
	busy         map[string]bool
	timers       map[string]*timer // by identity: stream, key, windows, tag
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
	// laneTurn is the lane whose keys go first when more lanes have
	// work than bundles can start (laneGroups).
	laneTurn int
}

// keyedConfig is what keyed needs of its stage's spec.
type keyedConfig struct {
	stage      string
	in         PCollSpec // the stage's main input
	timers     []TimerSpec
	timeSorted bool
	lateness   int64
	lanes      int // StageSpec.Lanes
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

func newKeyed(cfg keyedConfig) *keyed {
	return &keyed{cfg: cfg, pending: map[string]*keyWork{}, busy: map[string]bool{}, timers: map[string]*timer{}, windows: map[string]*StateWindow{}, sorted: map[string]*sortBuffer{},
		scannedAt: coders.MinTimestamp, ranEarly: map[string]bool{}}
}

// add takes a stateful stage's arriving input: filed under their encoded
// keys, or first buffered for sorting (sorted.go) against the stage's
// input watermark inWM.
func (k *keyed) add(c []byte, inWM int64) error {
	if k.cfg.in.Key == nil {
		return fmt.Errorf("stateful input is not KV-coded")
	}
	if k.cfg.timeSorted {
		return k.buffer(c, inWM)
	}
	return k.file(c)
}

// file files elements under their encoded keys, ready to run.
func (k *keyed) file(c []byte) error {
	in := k.cfg.in
	if in.Key == nil {
		return fmt.Errorf("stateful input is not KV-coded")
	}
	kind := in.Codec.WindowKind()
	return coders.EachRaw(c, in.Codec, func(v *coders.WindowedValue, raw []byte) error {
		kn, err := in.Key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		key := string(v.Elem[:kn])
		w := k.pending[key]
		if w == nil {
			w = &keyWork{minTS: v.Timestamp}
			k.pending[key] = w
		}
		w.data = append(w.data, raw...)
		k.pendingBytes += int64(len(raw))
		w.minTS = min(w.minTS, v.Timestamp)
		return coders.EachWindow(in.Codec, v, func(win []byte) error {
			sw, err := k.track(key, win, kind)
			if sw != nil {
				k.armExpiry(sw, kind)
			}
			return err
		})
	})
}

// setTimers applies the timers a bundle set or cleared; the latest setting
// of a timer wins, so it is never delivered twice.
func (k *keyed) setTimers(out map[TimerStream][][]byte) error {
	for _, ts := range k.cfg.timers {
		for _, c := range out[ts.Stream] {
			if err := k.parseTimers(ts, c); err != nil {
				return fmt.Errorf("timers of %s/%s: %w", ts.Stream.Transform, ts.Stream.Family, err)
			}
		}
	}
	return nil
}

func (k *keyed) parseTimers(ts TimerSpec, c []byte) error {
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
			delete(k.timers, id)
			continue
		}
		k.timers[id] = &timer{
			id: id, stream: ts.Stream, key: string(t.Key), windows: string(t.Windows), fire: t.Fire, hold: t.Hold,
			processing: ts.Processing, enc: raw,
		}
	}
	return nil
}

// due reports whether a timer may fire at the stage's input watermark inWM
// and processing time now. Event-time timers fire once the watermark
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
func (k *keyed) due(t *timer, now, inWM int64) bool {
	if t.processing {
		return t.fire <= now || (inWM >= coders.MaxTimestamp && !k.ranEarly[t.id])
	}
	if w := k.pending[t.key]; w != nil && w.minTS <= t.fire {
		return false
	}
	return t.fire < inWM || inWM >= coders.MaxTimestamp
}

// cut hands out the stage's work at processing time now and input
// watermark inWM: each free key with pending input (when runInput: the
// stage may run) or due timers goes to one bundle, keys spread over at
// most n bundles made by newBundle. Per key only the earliest due timers
// are delivered, so timers fire in timestamp order even when firing one
// sets an earlier one. Sorted input whose time came is released first.
func (k *keyed) cut(now, inWM int64, runInput bool, n int, newBundle func() *bundle) ([]*bundle, error) {
	if err := k.releaseSorted(inWM); err != nil {
		return nil, err
	}
	work := map[string][]*timer{}
	for _, t := range k.timers {
		if !k.busy[t.key] && k.due(t, now, inWM) {
			work[t.key] = earliest(work[t.key], t)
		}
	}
	var keys []string
	for key := range work {
		keys = append(keys, key)
	}
	if runInput {
		for key := range k.pending {
			if _, ok := work[key]; !ok && !k.busy[key] {
				keys = append(keys, key)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Strings(keys)
	groups, lanes := laneGroups(keys, k.cfg.lanes, n, k.laneTurn)
	if k.cfg.lanes > 1 && len(lanes) > 0 {
		k.laneTurn = (lanes[len(lanes)-1] + 1) % k.cfg.lanes
	}
	bundles := make([]*bundle, len(groups))
	for i, g := range groups {
		bundles[i] = newBundle()
		bundles[i].Lane = lanes[i] + 1
		for _, key := range g {
			k.addKey(bundles[i], key, runInput, work[key], now)
		}
	}
	return bundles, nil
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

// addKey gives key, its pending input when withInput, and timers to b.
func (k *keyed) addKey(b *bundle, key string, withInput bool, timers []*timer, now int64) {
	k.busy[key] = true
	b.Keys = append(b.Keys, key)
	if w := k.pending[key]; w != nil && withInput {
		b.Input = append(b.Input, w.data)
		b.minTS = min(b.minTS, w.minTS)
		k.pendingBytes -= int64(len(w.data))
		delete(k.pending, key)
	}
	sort.Slice(timers, func(i, j int) bool { return timers[i].id < timers[j].id })
	for _, t := range timers {
		if b.Timers == nil {
			b.Timers = map[TimerStream][]byte{}
		}
		b.Timers[t.stream] = append(b.Timers[t.stream], t.enc...)
		b.minTS = min(b.minTS, t.hold, t.fire)
		if t.processing && t.fire > now {
			k.ranEarly[t.id] = true
		}
		delete(k.timers, t.id)
	}
}

// release frees the keys of a bundle that ended, and asks the next expiry
// check to look at their windows again.
func (k *keyed) release(keys []string) {
	for _, key := range keys {
		delete(k.busy, key)
	}
	k.rescan = true
}

// watermark holds the output watermark wm at pending input, sort buffers
// and timer holds; timers without holds still keep the stage, and the
// job, open.
func (k *keyed) watermark(wm int64) int64 {
	for _, w := range k.pending {
		wm = min(wm, w.minTS)
	}
	for _, b := range k.sorted {
		wm = min(wm, b.minTS)
	}
	for _, t := range k.timers {
		wm = min(wm, t.hold)
	}
	if len(k.timers) > 0 && wm >= coders.MaxTimestamp {
		wm = coders.MaxTimestamp - 1
	}
	return wm
}

// nextTimerWakeup is the earliest processing-time timer due after now.
func (k *keyed) nextTimerWakeup(now int64) (int64, bool) {
	at, ok := int64(0), false
	for _, t := range k.timers {
		if t.processing && t.fire > now && (!ok || t.fire < at) {
			at, ok = t.fire, true
		}
	}
	return at, ok
}

// timerID is a timer's identity: a timer set again with the same one
// replaces it.
func timerID(s TimerStream, t *coders.Timer) string {
	return s.Transform + "\x00" + s.Family + "\x00" + string(t.Key) + "\x00" + string(t.Windows) + "\x00" + string(t.Tag)
}

// track remembers that a key's window may hold state, and returns the
// window if it is new.
func (k *keyed) track(key string, win []byte, kind coders.WindowKind) (*StateWindow, error) {
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
	sw := &StateWindow{Stage: k.cfg.stage, Key: []byte(key), Window: append([]byte(nil), win...), maxTS: maxTS}
	k.windows[id] = sw
	return sw, nil
}

// expire returns, and forgets, the windows whose end plus allowed lateness
// the input watermark inWM has passed, and whose key no bundle owns and
// has no input or timer left.
func (k *keyed) expire(inWM int64) []StateWindow {
	if len(k.windows) == 0 {
		return nil
	}
	if inWM <= k.scannedAt && !k.rescan {
		return nil // nothing could have expired since the last scan
	}
	k.scannedAt, k.rescan = inWM, false
	var out []StateWindow
	kind := k.cfg.in.Codec.WindowKind()
	for id, w := range k.windows {
		key := string(w.Key)
		if k.busy[key] || k.pending[key] != nil || k.sorted[key] != nil {
			continue
		}
		if gc := w.maxTS + k.cfg.lateness; gc < inWM || inWM >= coders.MaxTimestamp {
			if !k.hasTimersFor(key, string(w.Window), kind) {
				out = append(out, *w)
				delete(k.windows, id)
			}
		}
	}
	return out
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

// requeue gives a bundle that had not started its input owned and the
// timers it was handed back: its input goes to the front of its keys'
// queues and its timers are set again, unless set anew since.
func (k *keyed) requeue(owned [][]byte, timers map[TimerStream][]byte) error {
	// The bundle's keys were busy, so input that arrived for them since
	// queued behind; it goes back behind the bundle's.
	later := k.pending
	k.pending = map[string]*keyWork{}
	for _, c := range owned {
		if err := k.file(c); err != nil {
			return err
		}
	}
	for key, w := range later {
		if cur := k.pending[key]; cur != nil {
			cur.data = append(cur.data, w.data...)
			cur.minTS = min(cur.minTS, w.minTS)
		} else {
			k.pending[key] = w
		}
	}
	set := k.timers
	k.timers = map[string]*timer{}
	err := k.setTimers(oneChunkEach(timers))
	for id, t := range k.timers {
		if set[id] == nil {
			set[id] = t
		}
	}
	k.timers = set
	return err
}

func oneChunkEach(m map[TimerStream][]byte) map[TimerStream][][]byte {
	out := make(map[TimerStream][][]byte, len(m))
	for k, v := range m {
		out[k] = [][]byte{v}
	}
	return out
}

// sortStateWindows sorts expired windows by key and window, the order
// Ready hands them out in.
func sortStateWindows(out []StateWindow) {
	sort.Slice(out, func(i, j int) bool {
		if string(out[i].Key) != string(out[j].Key) {
			return string(out[i].Key) < string(out[j].Key)
		}
		return string(out[i].Window) < string(out[j].Window)
	})
}
