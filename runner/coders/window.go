package coders

// IntervalWindow is [Start, End) in milliseconds. Beam's window max timestamp
// is End-1.
type IntervalWindow struct{ Start, End int64 }

// MaxTimestamp is the last timestamp inside the window.
func (w IntervalWindow) MaxTimestamp() int64 { return w.End - 1 }

// AppendIntervalWindow appends w as beam:coder:interval_window:v1: the end
// as an event time, then the duration as an unsigned varint. Storing the
// end first keeps encoded windows with equal ends adjacent when sorted.
func AppendIntervalWindow(dst []byte, w IntervalWindow) []byte {
	dst = AppendTimestamp(dst, w.End)
	return AppendUvarint(dst, uint64(w.End-w.Start))
}

// DecodeIntervalWindow decodes an interval window from the start of b,
// returning the bytes read.
func DecodeIntervalWindow(b []byte) (IntervalWindow, int, error) {
	end, err := Timestamp(b)
	if err != nil {
		return IntervalWindow{}, 0, err
	}
	d, n, err := Uvarint(b[TimestampSize:])
	if err != nil {
		return IntervalWindow{}, 0, err
	}
	// The SDKs write the span as a signed varint: a window ending before
	// it starts (a WindowFn may make one) wraps back to its start here.
	start := end - int64(d)
	if (int64(d) >= 0) != (start <= end) {
		return IntervalWindow{}, 0, ErrBadValue // the start overflows
	}
	return IntervalWindow{Start: start, End: end}, TimestampSize + n, nil
}

// WindowKind tells parsers how to find a window's size without a Codec
// lookup for the two window coders nearly every pipeline uses.
type WindowKind uint8

const (
	// GlobalWindow encodes as zero bytes.
	GlobalWindow WindowKind = iota
	// IntervalWindows are decoded with DecodeIntervalWindow.
	IntervalWindows
	// CustomWindows are beam:coder:custom_window:v1: an SDK's own window
	// type behind its max timestamp, which is all the runner reads.
	CustomWindows
	// OtherWindow is any other window coder, opaque to the runner.
	OtherWindow
)

// WindowKindOf is the kind of windows encoded with a window coder of urn.
func WindowKindOf(urn string) WindowKind {
	switch urn {
	case URNGlobalWindow:
		return GlobalWindow
	case URNIntervalWindow:
		return IntervalWindows
	case URNCustomWindow:
		return CustomWindows
	}
	return OtherWindow
}

// WindowBounds decodes the start and max timestamp of one whole encoded
// window of the kind. Windows without a start (global, custom) start at
// MinTimestamp.
func WindowBounds(kind WindowKind, win []byte) (start, maxTS int64, err error) {
	switch kind {
	case GlobalWindow:
		if len(win) != 0 {
			return 0, 0, ErrBadValue
		}
		return MinTimestamp, EndOfGlobalWindow, nil
	case IntervalWindows:
		iw, n, err := DecodeIntervalWindow(win)
		if err != nil {
			return 0, 0, err
		}
		// Empty windows are valid: Beam's model lets a WindowFn assign an
		// element to [t, t), whose max timestamp is before both.
		if n != len(win) {
			return 0, 0, ErrBadValue
		}
		return iw.Start, iw.MaxTimestamp(), nil
	case CustomWindows:
		ts, err := Timestamp(win)
		return MinTimestamp, ts, err
	}
	return 0, 0, ErrBadValue
}
