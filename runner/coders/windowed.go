package coders

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// WindowedValue is a parsed beam:coder:windowed_value:v1 element. All slices
// point into the parsed buffer, so it is only valid while that buffer is.
type WindowedValue struct {
	Timestamp int64 // event time in milliseconds
	// NumWindows is how many encoded windows Windows holds, back to back.
	// Walk them with WindowedValueCodec.NextWindow.
	NumWindows int
	Windows    []byte
	Pane       PaneInfo
	Elem       []byte // encoded element
}

// WindowedValueCodec parses windowed values of one compiled coder. For
// beam:coder:param_windowed_value:v1 the header comes from the coder's
// payload and only the element is on the wire.
type WindowedValueCodec struct {
	Elem   *Codec
	Window *Codec
	kind   WindowKind
	param  *WindowedValue // fixed header of a param_windowed_value coder
}

// CompileWindowedValue compiles a windowed_value or param_windowed_value
// coder.
func CompileWindowedValue(coders map[string]*pipepb.Coder, coderID string) (*WindowedValueCodec, error) {
	c, err := Compile(coders, coderID)
	if err != nil {
		return nil, err
	}
	if c.kind != kWindowedValue && c.kind != kParamWindowedValue {
		return nil, fmt.Errorf("coders: coder %q (%s) is not a windowed value coder", coderID, c.urn)
	}
	wc := &WindowedValueCodec{Elem: c.comps[0], Window: c.comps[1], kind: windowKind(c.comps[1])}
	if c.kind == kParamWindowedValue {
		if err := wc.setParamHeader(coders[coderID].GetSpec().GetPayload()); err != nil {
			return nil, fmt.Errorf("coders: coder %q: bad param_windowed_value payload: %w", coderID, err)
		}
	}
	return wc, nil
}

// setParamHeader decodes the payload: a windowed value with a bytes element.
func (c *WindowedValueCodec) setParamHeader(payload []byte) error {
	var wv WindowedValue
	if _, err := c.parseHeader(payload, &wv); err != nil {
		return err
	}
	c.param = &wv
	return nil
}

func windowKind(w *Codec) WindowKind {
	switch w.kind {
	case kGlobalWindow:
		return GlobalWindow
	case kIntervalWindow:
		return IntervalWindows
	case kCustomWindow:
		return CustomWindows
	}
	return OtherWindow
}

// WindowKind reports the kind of the window coder.
func (c *WindowedValueCodec) WindowKind() WindowKind { return c.kind }

// Parse parses the windowed value at the start of b into wv and returns the
// bytes consumed.
func (c *WindowedValueCodec) Parse(b []byte, wv *WindowedValue) (int, error) {
	off := 0
	if c.param != nil {
		*wv = *c.param
	} else {
		n, err := c.parseHeader(b, wv)
		if err != nil {
			return 0, err
		}
		off = n
	}
	n, err := c.Elem.Len(b[off:])
	if err != nil {
		return 0, err
	}
	wv.Elem = b[off : off+n : off+n]
	return off + n, nil
}

// parseHeader parses timestamp, windows and pane.
func (c *WindowedValueCodec) parseHeader(b []byte, wv *WindowedValue) (int, error) {
	ts, err := Timestamp(b)
	if err != nil {
		return 0, err
	}
	nw, wl, err := windowsLen(b[TimestampSize:], c.Window)
	if err != nil {
		return 0, err
	}
	off := TimestampSize + 4
	wv.Timestamp, wv.NumWindows, wv.Windows = ts, nw, b[off:off+wl:off+wl]
	off += wl
	p, n, err := DecodePane(b[off:])
	if err != nil {
		return 0, err
	}
	wv.Pane = p
	return off + n, nil
}

// NextWindow splits the first encoded window off windows (as found in
// WindowedValue.Windows), so callers can explode an element into its windows
// without allocating.
func (c *WindowedValueCodec) NextWindow(windows []byte) (window, rest []byte, err error) {
	n, err := c.Window.Len(windows)
	if err != nil {
		return nil, nil, err
	}
	return windows[:n:n], windows[n:], nil
}

// windowsLen measures a window list: a big-endian int32 count, then the
// windows. It returns the count and the size of the windows after the count.
func windowsLen(b []byte, win *Codec) (count, size int, err error) {
	c, err := int32Count(b)
	if err != nil {
		return 0, 0, err
	}
	if c < 0 {
		return 0, 0, ErrBadValue
	}
	size, err = countedLen(b[4:], int(c), win)
	return int(c), size, err
}

// windowedValueLen measures a full windowed value.
func windowedValueLen(b []byte, elem, win *Codec) (int, error) {
	if len(b) < TimestampSize {
		return 0, ErrShort
	}
	_, wl, err := windowsLen(b[TimestampSize:], win)
	if err != nil {
		return 0, err
	}
	off := TimestampSize + 4 + wl
	pl, err := paneLen(b[off:])
	if err != nil {
		return 0, err
	}
	off += pl
	el, err := elem.Len(b[off:])
	if err != nil {
		return 0, err
	}
	return off + el, nil
}

// AppendWindowedValueHeader appends timestamp, windows and pane; the encoded
// element must follow. windows holds numWindows encoded windows back to back
// (zero bytes for the global window).
func AppendWindowedValueHeader(dst []byte, ts int64, numWindows int, windows []byte, pane PaneInfo) []byte {
	dst = AppendTimestamp(dst, ts)
	dst = AppendIterableHeader(dst, int32(numWindows))
	dst = append(dst, windows...)
	return AppendPane(dst, pane)
}

// AppendWindowedValue appends a complete windowed value.
func AppendWindowedValue(dst []byte, ts int64, numWindows int, windows []byte, pane PaneInfo, elem []byte) []byte {
	return append(AppendWindowedValueHeader(dst, ts, numWindows, windows, pane), elem...)
}
