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
	return IntervalWindow{Start: end - int64(d), End: end}, TimestampSize + n, nil
}

// WindowKind tells parsers how to find a window's size without a Codec
// lookup for the two window coders nearly every pipeline uses.
type WindowKind uint8

const (
	// GlobalWindow encodes as zero bytes.
	GlobalWindow WindowKind = iota
	// IntervalWindows are decoded with DecodeIntervalWindow.
	IntervalWindows
	// OtherWindow is any other (length-prefixed or custom) window coder.
	OtherWindow
)
