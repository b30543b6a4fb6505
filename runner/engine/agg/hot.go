package agg

import (
	"encoding/binary"
	"fmt"
)

// A hot key is one whose values, read back from the spill when its window
// fires, pass the hot budget: the rest of its values go to pages in the hot
// space rather than memory, and its pane carries a state token for them
// (Beam's state-backed iterable), which the SDK reads page by page over
// the State API (StateKey.Runner). The driver serves the pages.
//
// A token is the GBK's hot prefix and a run number; page i of a run is
// stored under the token and i (big-endian uint32), its value a flag byte
// (HotLastPage on the last page) and whole encoded values.

// HotPage is the size a page is written at.
const HotPage = 1 << 20

// HotLastPage flags a run's last page.
const HotLastPage = 1

// hotRun names a hot key's pages; ts is the least held output time of the
// values in them (the window's end when none is held).
type hotRun struct {
	token []byte
	ts    int64
}

type hotWriter struct {
	s    *spiller
	run  hotRun
	page int
	buf  []byte
}

func (s *spiller) newHotWriter(maxTS int64) *hotWriter {
	token := binary.BigEndian.AppendUint64(append([]byte(nil), s.hotPrefix...), s.hotNext)
	s.hotNext++
	return &hotWriter{s: s, run: hotRun{token: token, ts: maxTS}, buf: []byte{0}}
}

// add appends a value to the current page, writing it once full.
func (h *hotWriter) add(e batchElem, maxTS int64) error {
	if e.held {
		h.run.ts = min(h.run.ts, e.out)
	}
	h.buf = append(h.buf, e.value...)
	if len(h.buf) >= HotPage {
		return h.write(false)
	}
	return nil
}

// finish writes the last page and returns the run.
func (h *hotWriter) finish() (*hotRun, error) {
	if err := h.write(true); err != nil {
		return nil, err
	}
	return &h.run, nil
}

func (h *hotWriter) write(last bool) error {
	if last {
		h.buf[0] = HotLastPage
	}
	key := HotPageKey(h.run.token, h.page)
	if err := h.s.hot.WriteRun([][]byte{key}, [][]byte{h.buf}); err != nil {
		return fmt.Errorf("writing page %d of a hot key: %w", h.page, err)
	}
	h.page++
	h.buf = append(h.buf[:0], 0)
	return nil
}

// HotPageKey is where page i of the run named by token is stored.
func HotPageKey(token []byte, i int) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), token...), uint32(i))
}
