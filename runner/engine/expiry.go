package engine

import "github.com/beam-runner/beam-runner/runner/coders"

// OnWindowExpiration: a DoFn that declares it names an event-time timer
// family whose timers the SDK never sets; the runner sets one for each key
// and window that had input, firing at the window's garbage-collection
// time (its end plus the allowed lateness; for the global window, the end
// of input). It is an ordinary timer from then on: it fires after the
// window's other timers due before it, it holds the stage's output at the
// window's end (the SDK stamps what the callback outputs with the timer's
// hold), and the window's state is dropped only once it has fired, since
// expire waits for the key's timers.

// armExpiry sets the expiry timers of a newly tracked window, of kind.
func (k *keyed) armExpiry(sw *StateWindow, kind coders.WindowKind) {
	for _, ts := range k.cfg.timers {
		if !ts.Expiry {
			continue
		}
		t := expiryTimer(sw, k.cfg.lateness)
		t.Windows = timerWindow(sw.Window, kind, ts.Codec)
		id := timerID(ts.Stream, &t)
		if _, set := k.timers[id]; set {
			continue
		}
		k.timers[id] = &timer{
			id: id, stream: ts.Stream, key: string(sw.Key), windows: string(t.Windows), fire: t.Fire, hold: t.Hold,
			enc: coders.AppendTimer(nil, &t),
		}
	}
}

// expiryTimer is the timer that expires one key's window: it fires at the
// window's garbage-collection time and holds output at the window's end.
func expiryTimer(sw *StateWindow, lateness int64) coders.Timer {
	fire := sw.maxTS
	if lateness > 0 {
		fire = min(coders.MaxTimestamp, sw.maxTS+lateness)
		if fire < sw.maxTS { // overflowed
			fire = coders.MaxTimestamp
		}
	}
	return coders.Timer{
		Key: sw.Key, NumWindows: 1, Windows: sw.Window,
		Fire: fire, Hold: sw.maxTS, Pane: coders.NoFiringPane,
	}
}

// timerWindow is a window as a timer family's coder encodes it. A custom
// window reaches the runner behind its max timestamp (custom_window, which
// the windowing strategy names), but the SDK's timer coder names its own
// window coder, without that prefix.
func timerWindow(win []byte, kind coders.WindowKind, tc *coders.TimerCodec) []byte {
	if kind == coders.CustomWindows && tc.Window.URN() != coders.URNCustomWindow && len(win) >= coders.TimestampSize {
		return win[coders.TimestampSize:]
	}
	return win
}
