package store

import (
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// spillView is what a QueuedSpace holds at one point: the ops then queued
// over a Pebble snapshot of the disk (nil before the first write), read
// later from any goroutine, whatever is written or deleted since. Closing
// the scratch closes its views: their reads fail from then on.
type spillView struct {
	sp  *QueuedSpace
	ops []*spillOp

	mu   sync.Mutex
	snap *pebble.Snapshot
	done bool // released, or its scratch closed
}

// View returns a scan of what the space holds now, for another goroutine
// to read later (a checkpoint's writer reading back spilled input the
// snapshot references), and the function that lets the view go. It reads
// nothing and never waits on the disk. See agg.Viewing.
func (sp *QueuedSpace) View() (scan func(prefix []byte, fn func(key, value []byte) error) error, release func(), err error) {
	ops, err := sp.x.queue().pending() // before the disk's snapshot: see overlay
	if err != nil {
		return nil, nil, err
	}
	v := &spillView{sp: sp, ops: ops}
	x := sp.x
	db, err := x.acquire()
	if err != nil {
		return nil, nil, err
	}
	if db != nil {
		defer x.release()
		v.snap = db.NewSnapshot()
		x.mu.Lock()
		if x.views == nil {
			x.views = map[*spillView]bool{}
		}
		x.views[v] = true
		x.mu.Unlock()
	}
	return v.scan, v.release, nil
}

// scan is QueuedSpace.Scan as of the view.
func (v *spillView) scan(prefix []byte, fn func(key, value []byte) error) error {
	sp := v.sp
	full := append(slices.Clip(sp.prefix), prefix...)
	o := newOverlay(v.ops, full, nil)
	strip := func(k, val []byte) error { return fn(k[len(sp.prefix):], val) }
	v.mu.Lock()
	done, onDisk := v.done, v.snap != nil
	v.mu.Unlock()
	switch {
	case done:
		return sp.x.closedErr()
	case !onDisk: // taken before the first write: all of it was queued
		return o.merge(nil, strip)
	}
	// Counted as an operation, so closing the scratch waits for it.
	read := false
	err := sp.x.do(func(*pebble.DB) error {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.done {
			return sp.x.closedErr()
		}
		read = true
		return o.merge(func(f func(k, val []byte) error) error { return scanReader(v.snap, full, nil, f) }, strip)
	})
	if err == nil && !read {
		err = sp.x.closedErr()
	}
	return err
}

// release lets the view go; releasing twice is harmless.
func (v *spillView) release() {
	x := v.sp.x
	x.mu.Lock()
	delete(x.views, v)
	x.mu.Unlock()
	v.close()
}

func (v *spillView) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.done && v.snap != nil {
		_ = v.snap.Close()
	}
	v.done, v.snap = true, nil
}

// closeViews closes the scratch's views before its database closes; no
// operation is under way (closeLocked waited for them).
func (x *Scratch) closeViewsLocked() {
	for v := range x.views {
		v.close()
	}
	x.views = nil
}
