package agg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Spill is scratch space a GroupByKey moves buffered values to once they
// pass its memory budget. Keys compare as bytes; Scan yields the keys with
// a prefix in order, so writing each spill as a sorted run and scanning a
// window's prefix merges every run on read. The driver implements it over
// the store (an LSM, which does that merge); the engine sees only this, and
// does no I/O of its own.
type Spill interface {
	// WriteRun stores the pairs, atomically; the slices may be reused
	// after it returns.
	WriteRun(keys, values [][]byte) error
	// Scan calls fn for each key with the prefix in key order; the slices
	// are valid only during the call. An error fn returns ends the scan
	// and is returned.
	Scan(prefix []byte, fn func(key, value []byte) error) error
	// ScanFrom is Scan from the first key at or after from (nil: the
	// prefix's first), for a read that goes on where it stopped.
	ScanFrom(prefix, from []byte, fn func(key, value []byte) error) error
	// DeletePrefix drops every key with the prefix.
	DeletePrefix(prefix []byte) error
}

// Queuing is implemented by a Spill that queues its writes for a
// goroutine of its own (the store's, for a job), so that spilling never
// waits on the disk: WriteRun returns at once, and what it took is in
// memory until written. Queued reports those bytes and whether they reach
// the queue's bound. Past it, the engine keeps what it would spill in
// memory, counted against its budget, rather than queue more: a stalled
// disk then holds memory where the engine sees it, not in a queue.
type Queuing interface {
	Queued() (bytes int64, full bool)
}

// Viewing is implemented by a Spill that can be read as it is now, later
// and from another goroutine, whatever is written or deleted after: a
// checkpoint's snapshot references its spilled input, taken on the
// driver, and the checkpoint's writer reads it back. View returns the
// view's scan (as Spill.Scan) and the function that lets it go; it reads
// nothing itself.
type Viewing interface {
	View() (scan func(prefix []byte, fn func(key, value []byte) error) error, release func(), err error)
}

// SpillFull reports whether sp queues its writes and its queue is full.
func SpillFull(sp Spill) bool {
	_, full := spillQueued(sp)
	return full
}

// spillQueued is Queuing.Queued, or nothing for a Spill that writes
// before it returns.
func spillQueued(sp Spill) (bytes int64, full bool) {
	q, ok := sp.(Queuing)
	if !ok {
		return 0, false
	}
	return q.Queued()
}

// spiller moves the batch path's buffered values to a Spill past budget
// bytes. A spilled value's key is window, key (each in an order-keeping
// escape) and arrival number, so a window's scan yields its keys in byte
// order and each key's values in arrival order, as runs do.
type spiller struct {
	sp     Spill
	budget int // bytes of buffered keys and values before a spill
	// hot, if set, takes a fired key's values past hotBytes as pages
	// (hot.go); hotPrefix starts this GBK's tokens there.
	hot       Spill
	hotPrefix []byte
	hotBytes  int
	hotNext   uint64
	bytes     int
	err       error // first Spill error; the GBK fails with it

	// A piece of a run being written: entries in buf, each a key and a
	// value; ends holds each entry's start and key end.
	buf        []byte
	ends       [][2]int
	keys, vals [][]byte
}

// elemOverhead approximates what buffering one value costs besides its
// bytes: the batchElem and the slice growth around it.
const elemOverhead = 48

// note counts an added value and reports whether to spill: the budget
// is passed, counting what the spill's queue (if it has one) still holds
// in memory, and the queue takes more. Without the queue's bytes a spill
// of a whole window into a slow queue let the next window fill the
// budget again while the first was still in memory.
func (s *spiller) note(key, value []byte) bool {
	s.bytes += len(key) + len(value) + elemOverhead
	if s.bytes <= s.budget/2 { // a spill is never a run of a few values
		return false
	}
	queued, full := spillQueued(s.sp)
	return s.bytes+int(queued) > s.budget && !full
}

// spillWin writes a window's in-memory values as one sorted run and drops
// them (and so the references into the engine's input chunks). The run
// goes out in pieces of about spillPiece bytes, so spilling needs little
// memory beyond what it frees; a run needs no atomicity, as spill is
// dropped whole after a crash.
func (s *spiller) spillWin(w *batchWin) {
	n := w.count()
	if n == 0 || s.err != nil {
		return
	}
	// Every value in memory arrived after every value spilled before, so
	// numbering them in key order from the oldest one's arrival number
	// keeps each key's values in arrival order across runs.
	seq := w.next - uint32(n)
	prefix := spillPrefix(w.win)
	w.sorted(true).each(func(e batchElem) {
		start := len(s.buf)
		s.buf = appendEscaped(append(s.buf, prefix...), e.key)
		s.buf = binary.BigEndian.AppendUint32(s.buf, seq)
		seq++
		mid := len(s.buf)
		if e.held {
			s.buf = binary.AppendVarint(append(s.buf, 1), e.out)
		} else {
			s.buf = append(s.buf, 0)
		}
		s.buf = append(s.buf, e.value...)
		s.ends = append(s.ends, [2]int{start, mid})
		if len(s.buf) >= spillPiece {
			s.writePiece()
		}
	})
	s.writePiece()
	if s.err != nil {
		return
	}
	w.drop()
	w.spilled = true
}

// spillPiece bounds the bytes of one write to the Spill.
const spillPiece = 1 << 20

// writePiece writes the entries buffered in buf and forgets them.
func (s *spiller) writePiece() {
	if len(s.ends) == 0 || s.err != nil {
		return
	}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	for i, e := range s.ends {
		end := len(s.buf)
		if i+1 < len(s.ends) {
			end = s.ends[i+1][0]
		}
		s.keys = append(s.keys, s.buf[e[0]:e[1]])
		s.vals = append(s.vals, s.buf[e[1]:end])
	}
	if err := s.sp.WriteRun(s.keys, s.vals); err != nil {
		s.err = fmt.Errorf("agg: spilling: %w", err)
	}
	s.buf, s.ends = s.buf[:0], s.ends[:0]
}

// Scan scans the spill (a method so hot.go's pages share its errors).
func (s *spiller) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.sp.Scan(prefix, fn)
}

func spillPrefix(win []byte) []byte { return appendEscaped(nil, win) }

// appendEscaped appends b so that escaped strings sort as b does and none
// is a prefix of another: 0x00 becomes 0x00 0xff, and 0x00 0x01 ends it.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

var errSpillKey = errors.New("malformed spill key")

// parseSpillKey reads an escaped key and the arrival number after it; the
// key is a fresh copy.
func parseSpillKey(b []byte) ([]byte, uint32, error) {
	var key []byte
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			key = append(key, b[i])
			continue
		}
		switch b[i+1] {
		case 0xff:
			key = append(key, 0)
			i++
		case 1:
			rest := b[i+2:]
			if len(rest) != 4 {
				return nil, 0, errSpillKey
			}
			if key == nil {
				key = []byte{}
			}
			return key, binary.BigEndian.Uint32(rest), nil
		default:
			return nil, 0, errSpillKey
		}
	}
	return nil, 0, errSpillKey
}

func parseSpillValue(v []byte) (batchElem, error) {
	if len(v) == 0 {
		return batchElem{}, errSpillKey
	}
	e := batchElem{}
	rest := v[1:]
	if v[0] == 1 {
		out, n := binary.Varint(rest)
		if n <= 0 {
			return batchElem{}, errSpillKey
		}
		e.out, e.held, rest = out, true, rest[n:]
	}
	e.value = bytes.Clone(rest)
	return e, nil
}
