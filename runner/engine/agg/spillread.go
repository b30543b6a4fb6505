package agg

import (
	"bytes"
	"errors"
	"fmt"
)

// readWin hands out a spilled window's values by key, in order, calling f
// once per key, from where its last call stopped, until f asks to stop
// (returns false); it reports whether it read the window to its end, and
// then drops it from the Spill. So a spilled window is handed out as its
// readers take it, as an in-memory one is, not all at once. The values
// still in memory are merged in as the spill's scan goes, not spilled
// first: each key's come after its spilled ones, as they arrived after
// them. With allowHot and a hot space, a key's values past the hot budget
// go to pages there instead of memory, and f gets the first values and
// the pages' run.
func (s *spiller) readWin(w *batchWin, allowHot bool, f func(es []batchElem, hot *hotRun) bool) bool {
	prefix := spillPrefix(w.win)
	if w.readFrom == nil {
		w.readFrom, w.iter = prefix, w.sorted(true)
		w.memGroup = w.iter.nextGroup()
	}
	if s.err != nil {
		return true
	}
	r := &winReader{w: w, g: &spillGroup{s: s, maxTS: w.maxTS, allowHot: allowHot, f: f}}
	err := s.sp.ScanFrom(prefix, w.readFrom, func(k, v []byte) error {
		key, _, err := parseSpillKey(k[len(prefix):])
		if err != nil {
			return err
		}
		if err := r.startKey(key); err != nil {
			if err == errStopRead {
				w.readFrom = bytes.Clone(k) // this key's first value: go on here
			}
			return err
		}
		e, err := parseSpillValue(v)
		if err != nil {
			return err
		}
		return r.g.add(key, e)
	})
	if err == nil {
		w.readFrom = prefixEnd(prefix) // the spill is read: memory's rest
		err = r.finish()
	}
	if err == errStopRead {
		return false
	}
	if err == nil {
		w.drop()
		err = s.sp.DeletePrefix(prefix)
	}
	if err != nil {
		s.err = fmt.Errorf("agg: reading spilled window %x: %w", w.win, err)
	}
	return true
}

// errStopRead ends a read of a spilled window whose reader stopped.
var errStopRead = errors.New("agg: reader stopped")

// winReader merges a spilled window's scan with its values in memory
// (w.memGroup, then w.iter's groups), handing each key's on through g.
type winReader struct {
	w *batchWin
	g *spillGroup
}

// startKey readies the reader for a spilled value of key: it hands on
// the key before it, with its values from memory after its spilled ones,
// then the keys only memory holds before key. errStopRead: the reader
// stopped before key.
func (r *winReader) startKey(key []byte) error {
	if r.g.next(key) {
		if err := r.handOn(); err != nil {
			return err
		}
	}
	if len(r.g.cur) > 0 {
		return nil
	}
	return r.memBefore(key)
}

// finish hands on the last spilled key and every key only memory holds.
func (r *winReader) finish() error {
	if len(r.g.cur) > 0 {
		if err := r.handOn(); err != nil {
			return err
		}
	}
	return r.memBefore(nil)
}

// handOn hands on the gathered key with its values in memory, if any.
func (r *winReader) handOn() error {
	if m := r.w.memGroup; m != nil && bytes.Equal(m[0].key, r.g.key) {
		if err := r.addMem(); err != nil {
			return err
		}
	}
	return r.g.flushErr()
}

// memBefore hands on the keys in memory before key (nil: all of them).
func (r *winReader) memBefore(key []byte) error {
	for m := r.w.memGroup; m != nil && (key == nil || bytes.Compare(m[0].key, key) < 0); m = r.w.memGroup {
		if err := r.addMem(); err != nil {
			return err
		}
		if err := r.g.flushErr(); err != nil {
			return err
		}
	}
	return nil
}

// addMem adds the current group in memory to the gathered values and
// moves to the next.
func (r *winReader) addMem() error {
	m := r.w.memGroup
	for _, e := range m {
		if err := r.g.add(m[0].key, e); err != nil {
			return err
		}
	}
	r.w.memGroup = r.w.iter.nextGroup()
	return nil
}

// spillGroup gathers a spilled window's values one key at a time, as the
// scan reads them in key order, and hands each key's on: as values, or,
// past hotBytes, the first ones as values and the rest as a hot run.
type spillGroup struct {
	s        *spiller
	maxTS    int64
	allowHot bool
	f        func(es []batchElem, hot *hotRun) bool
	cur      []batchElem
	key      []byte
	bytes    int
	hot      *hotWriter
	err      error // a hot run's failure, which ends the read
}

// next reports whether key starts a new key after the values gathered.
func (g *spillGroup) next(key []byte) bool {
	return len(g.cur) > 0 && !bytes.Equal(key, g.key)
}

func (g *spillGroup) add(key []byte, e batchElem) error {
	e.key, e.prefix = key, keyPrefix(key)
	if len(g.cur) == 0 {
		g.key = key
	}
	if g.hot != nil {
		return g.hot.add(e, g.maxTS)
	}
	g.cur = append(g.cur, e)
	g.bytes += len(e.value)
	if g.allowHot && g.s.hot != nil && g.bytes > g.s.hotBytes {
		g.hot = g.s.newHotWriter(g.maxTS)
	}
	return nil
}

// flushErr is flush as an error: errStopRead once the reader stopped.
func (g *spillGroup) flushErr() error {
	if more := g.flush(); g.err != nil {
		return g.err
	} else if !more {
		return errStopRead
	}
	return nil
}

// flush hands on the current key's values, if any, and starts the next;
// it reports whether the reader takes more (false after a failure too,
// kept in err).
func (g *spillGroup) flush() bool {
	if len(g.cur) == 0 || g.err != nil {
		return g.err == nil
	}
	var run *hotRun
	if g.hot != nil {
		r, err := g.hot.finish()
		if err != nil {
			g.err = err
			return false
		}
		run = r
	}
	more := g.f(g.cur, run)
	g.cur, g.bytes, g.hot = nil, 0, nil
	return more
}

// prefixEnd is the least key after every key with prefix, nil for none
// (a prefix of 0xff bytes, which an escaped window never is).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
