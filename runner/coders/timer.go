package coders

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Timer is a parsed beam:coder:timer:v1 value. Slices point into the parsed
// buffer. The wire layout is: key, dynamic tag (string_utf8), windows (int32
// count + windows), clear bit; and, only if not cleared, fire timestamp, hold
// timestamp and pane.
type Timer struct {
	Key        []byte // encoded with the timer coder's key coder
	Tag        []byte // dynamic timer tag, UTF-8, without its length prefix
	NumWindows int
	Windows    []byte // NumWindows encoded windows back to back
	Clear      bool
	Fire, Hold int64 // event times in milliseconds; zero when Clear
	Pane       PaneInfo
}

// TimerCodec parses timers of one compiled timer coder.
type TimerCodec struct {
	Key    *Codec
	Window *Codec
}

// CompileTimer compiles a beam:coder:timer:v1 coder.
func CompileTimer(coders map[string]*pipepb.Coder, coderID string) (*TimerCodec, error) {
	c, err := Compile(coders, coderID)
	if err != nil {
		return nil, err
	}
	if c.kind != kTimer {
		return nil, fmt.Errorf("coders: coder %q (%s) is not a timer coder", coderID, c.urn)
	}
	return &TimerCodec{Key: c.comps[0], Window: c.comps[1]}, nil
}

// Parse parses the timer at the start of b into t and returns the bytes
// consumed.
func (c *TimerCodec) Parse(b []byte, t *Timer) (int, error) {
	kl, err := c.Key.Len(b)
	if err != nil {
		return 0, err
	}
	tag, tl, err := LengthPrefixed(b[kl:])
	if err != nil {
		return 0, err
	}
	off := kl + tl
	nw, wl, err := windowsLen(b[off:], c.Window)
	if err != nil {
		return 0, err
	}
	off += 4
	*t = Timer{Key: b[:kl:kl], Tag: tag, NumWindows: nw, Windows: b[off : off+wl : off+wl]}
	off += wl
	n, err := c.parseFiring(b[off:], t)
	if err != nil {
		return 0, err
	}
	return off + n, nil
}

// parseFiring parses the clear bit and, for set timers, when they fire.
func (c *TimerCodec) parseFiring(b []byte, t *Timer) (int, error) {
	if len(b) == 0 {
		return 0, ErrShort
	}
	switch b[0] {
	case 1:
		t.Clear = true
		return 1, nil
	case 0:
	default:
		return 0, ErrBadValue
	}
	if len(b) < 1+2*TimestampSize {
		return 0, ErrShort
	}
	t.Fire, _ = Timestamp(b[1:])
	t.Hold, _ = Timestamp(b[1+TimestampSize:])
	p, n, err := DecodePane(b[1+2*TimestampSize:])
	if err != nil {
		return 0, err
	}
	t.Pane = p
	return 1 + 2*TimestampSize + n, nil
}

// NextWindow splits the first encoded window off t.Windows.
func (c *TimerCodec) NextWindow(windows []byte) (window, rest []byte, err error) {
	n, err := c.Window.Len(windows)
	if err != nil {
		return nil, nil, err
	}
	return windows[:n:n], windows[n:], nil
}

// AppendTimer appends t in the timer coder encoding. Fire, Hold and Pane are
// not written for cleared timers, matching the SDKs.
func AppendTimer(dst []byte, t *Timer) []byte {
	dst = append(dst, t.Key...)
	dst = AppendLengthPrefixed(dst, t.Tag)
	dst = AppendIterableHeader(dst, int32(t.NumWindows))
	dst = append(dst, t.Windows...)
	if t.Clear {
		return append(dst, 1)
	}
	dst = append(dst, 0)
	dst = AppendTimestamp(dst, t.Fire)
	dst = AppendTimestamp(dst, t.Hold)
	return AppendPane(dst, t.Pane)
}

// timerLen measures a timer without keeping its fields.
func timerLen(b []byte, key, win *Codec) (int, error) {
	var t Timer
	tc := TimerCodec{Key: key, Window: win}
	return tc.Parse(b, &t)
}
