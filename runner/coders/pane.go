package coders

// Timing says when a pane fired relative to the watermark. The values are the
// wire values of Beam's pane encoding.
type Timing uint8

const (
	TimingEarly   Timing = 0
	TimingOnTime  Timing = 1
	TimingLate    Timing = 2
	TimingUnknown Timing = 3
)

// PaneInfo describes which trigger firing produced an element.
type PaneInfo struct {
	IsFirst, IsLast bool
	Timing          Timing
	Index           int64
	// OnTimeIndex is the non-speculative index; -1 for early panes.
	OnTimeIndex int64
}

// NoFiringPane is the pane of elements not produced by a trigger, which is
// what most elements carry. It encodes as the single byte 0x0F.
var NoFiringPane = PaneInfo{IsFirst: true, IsLast: true, Timing: TimingUnknown}

// Pane encodings, stored in the high nibble of the first byte.
const (
	paneOneByte    = 0 // indices implied to be 0
	paneOneIndex   = 1 // index, and on-time index derived from timing
	paneTwoIndices = 2 // index and on-time index
)

// AppendPane appends p in Beam's pane encoding. It picks the same compact
// form as the Java, Python and Go SDKs so the bytes are identical to theirs.
// For early panes the on-time index is not encoded: it is always -1.
func AppendPane(dst []byte, p PaneInfo) []byte {
	b := byte(p.Timing&3) << 2
	if p.IsFirst {
		b |= 1
	}
	if p.IsLast {
		b |= 2
	}
	switch {
	case (p.Index == 0 && p.OnTimeIndex == 0) || p.Timing == TimingUnknown:
		return append(dst, b)
	case p.Index == p.OnTimeIndex || p.Timing == TimingEarly:
		return AppendVarint(append(dst, b|paneOneIndex<<4), p.Index)
	default:
		dst = AppendVarint(append(dst, b|paneTwoIndices<<4), p.Index)
		return AppendVarint(dst, p.OnTimeIndex)
	}
}

// DecodePane decodes a pane from the start of b, returning the bytes read.
func DecodePane(b []byte) (PaneInfo, int, error) {
	if len(b) == 0 {
		return PaneInfo{}, 0, ErrShort
	}
	p := PaneInfo{IsFirst: b[0]&1 != 0, IsLast: b[0]&2 != 0, Timing: Timing(b[0]>>2) & 3}
	switch b[0] >> 4 {
	case paneOneByte:
		return p, 1, nil
	case paneOneIndex:
		idx, n, err := Varint(b[1:])
		if err != nil {
			return PaneInfo{}, 0, err
		}
		p.Index, p.OnTimeIndex = idx, idx
		if p.Timing == TimingEarly {
			p.OnTimeIndex = -1
		}
		return p, 1 + n, nil
	case paneTwoIndices:
		return decodeTwoIndices(p, b)
	}
	return PaneInfo{}, 0, ErrBadValue
}

func decodeTwoIndices(p PaneInfo, b []byte) (PaneInfo, int, error) {
	idx, n1, err := Varint(b[1:])
	if err != nil {
		return PaneInfo{}, 0, err
	}
	ot, n2, err := Varint(b[1+n1:])
	if err != nil {
		return PaneInfo{}, 0, err
	}
	p.Index, p.OnTimeIndex = idx, ot
	return p, 1 + n1 + n2, nil
}

// paneLen returns the encoded size of the pane at the start of b.
func paneLen(b []byte) (int, error) {
	_, n, err := DecodePane(b)
	return n, err
}
