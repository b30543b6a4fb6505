package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dustin/go-humanize"
)

// scratchDir is where, under the state dir, Scratches keep their data.
const scratchDir = "scratch"

// Scratch is one owner's (a job's) scratch space: a Pebble instance of
// its own under <state_dir>/scratch, opened on its first write and
// removed whole by Remove, so that a job's spill gives its disk space back
// the moment the job ends (deleting keys of a shared instance would free
// it only when compactions get round to it). Apart from the job records,
// a disk fault while spilling fails the job that spills and nothing else:
//   - it has no write-ahead log (its data is worthless after a crash: Open
//     empties the scratch dir), so its writes only reach the disk in
//     Pebble's background flushes, where a failure is an error, not a
//     fatal one;
//   - Pebble's write stalls are off, because a write stalled in Pebble is
//     never woken if the flush it waits for fails: settle holds writes
//     back instead, and gives up on a fault;
//   - on its first disk fault it is closed (Pebble would retry the failed
//     flush in a busy loop), and every operation of its Spaces after
//     returns the fault.
type Scratch struct {
	st   *Store
	name string // the owner's, for errors
	dir  string
	fs   *faultFS

	omu sync.Mutex // held while Pebble opens (open)

	// mu guards the fields below. Operations do not hold it while they use
	// the database, since a Scan's callback may write to the same scratch
	// (hot-key pages): they count themselves in active instead, and
	// closing waits until none is left (idle) after refusing new ones.
	mu      sync.Mutex
	idle    sync.Cond           // signalled when active drops to 0
	db      *pebble.DB          // nil until the first write, and once closed
	active  int                 // operations using db
	closing bool                // no new operations: a close is under way
	removed bool                // by Remove or the store's Close: no more opening
	made    bool                // an open was tried: there may be a directory to remove
	views   map[*spillView]bool // open views (view.go), closed before db

	unqueued atomic.Int64 // bytes written since the memtables were counted

	pmu      sync.Mutex
	progress chan struct{} // closed (and replaced) when a flush ends or on a fault

	qmu        sync.Mutex
	q          *spillQueue // the QueuedSpaces' writer (queue.go), made on first use
	queueLimit int64
}

const (
	scratchMemTable = 4 << 20 // Pebble's default
	// maxMemTables is how many memtables (the one written and those queued
	// for flushing) settle lets a write add to.
	maxMemTables = 3
)

// Scratch returns a new scratch space for owner (a job id, named in its
// errors and its directory). Nothing is on disk until its first write;
// Remove drops it. The store's Close removes those still open; one asked
// for after Close is removed already (the directory is no longer ours).
func (s *Store) Scratch(owner string) *Scratch {
	s.mu.RLock() // Close's removeScratches sees every Scratch made before it
	defer s.mu.RUnlock()
	s.smu.Lock()
	defer s.smu.Unlock()
	s.scratchSeq++
	x := &Scratch{st: s, name: owner, progress: make(chan struct{}), removed: s.closed, queueLimit: DefaultQueueLimit,
		dir: s.fs.PathJoin(s.dir, scratchDir, fmt.Sprintf("%d-%s", s.scratchSeq, dirSafe(owner)))}
	x.idle.L = &x.mu
	x.fs = newFaultFS(s.fs.FS, x.faulted)
	if s.closed {
		return x
	}
	if s.scratches == nil {
		s.scratches = map[*Scratch]bool{}
	}
	s.scratches[x] = true
	return x
}

// dirSafe is name as a directory name: letters, digits, '.', '_' and '-'
// kept, anything else '_', at most 64 bytes.
func dirSafe(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
	return name[:min(len(name), 64)]
}

// Dir is where the scratch keeps its data (there only once written).
func (x *Scratch) Dir() string { return x.dir }

// Size is the scratch's size on disk, in bytes: what its owner spilled.
// It reads Pebble's counters of its files, not the directory, so that the
// driver, which asks before each checkpoint, never walks a directory.
func (x *Scratch) Size() (int64, error) {
	var n uint64
	err := x.do(func(db *pebble.DB) error { n = db.Metrics().DiskSpaceUsage(); return nil })
	if errors.Is(err, ErrClosed) {
		return 0, nil // removed: nothing left on disk
	}
	return int64(n), err
}

// Remove closes the scratch and deletes its directory; its Spaces fail
// from then on. Removing twice is harmless.
func (x *Scratch) Remove() error {
	x.queue().stop(x.removedErr())
	x.mu.Lock()
	x.removed = true
	x.wake() // a write settle holds back gives up now
	x.mu.Unlock()
	x.omu.Lock() // an open under way ends (and closes what it opened) first
	x.omu.Unlock()
	x.mu.Lock()
	err := x.closeLocked()
	made := x.made
	x.mu.Unlock()
	x.st.smu.Lock()
	delete(x.st.scratches, x)
	x.st.smu.Unlock()
	if !made {
		return err
	}
	if rerr := x.fs.RemoveAll(x.dir); rerr != nil && err == nil {
		err = fmt.Errorf("removing the spill of %s in %s: %w", x.name, x.dir, rerr)
	}
	return err
}

// open opens the Pebble instance unless it is open already. It holds
// omu, not mu, while Pebble opens (it writes files, and the disk may take
// its time): readers, which take mu, never wait behind it.
func (x *Scratch) open() error {
	x.omu.Lock()
	defer x.omu.Unlock()
	x.mu.Lock()
	switch {
	case x.db != nil:
		x.mu.Unlock()
		return nil
	case x.removed, x.closing:
		x.mu.Unlock()
		return x.closedErr()
	}
	if err := x.fs.err(); err != nil {
		x.mu.Unlock()
		return x.faultErr(err)
	}
	x.made = true
	x.mu.Unlock()
	db, err := pebble.Open(x.dir, x.options())
	if err != nil {
		return fmt.Errorf("opening the spill store of %s in %s: %w", x.name, x.dir, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.removed || x.closing { // while it opened
		return errors.Join(x.closedErr(), db.Close())
	}
	x.db = db
	return nil
}

func (x *Scratch) options() *pebble.Options {
	return &pebble.Options{FS: x.fs, DisableWAL: true, Logger: pebbleLogger{x.st.log, x.fs},
		MemTableSize: scratchMemTable, MemTableStopWritesThreshold: 1 << 10, L0StopWritesThreshold: 1 << 10,
		EventListener: &pebble.EventListener{FlushEnd: func(pebble.FlushInfo) { x.wake() },
			// A damaged file fails the read that found it (Pebble's default
			// would end the process).
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				x.st.log.Error("store: a spill file is damaged", "owner", x.name, "file", info.Path, "details", info.Details.Error())
			}}}
}

// faulted is the scratch faultFS's report of its first fault.
func (x *Scratch) faulted(cause error) {
	x.st.log.Error("store: disk fault while spilling; the job's spill stops", "owner", x.name, "dir", x.dir, "err", cause)
	x.wake()
	go x.close()
}

func (x *Scratch) faultErr(cause error) error {
	return fmt.Errorf("spill store of %s in %s stopped after a %w: %w", x.name, x.dir, ErrDiskFault, cause)
}

func (x *Scratch) removedErr() error {
	return fmt.Errorf("spill store of %s in %s: %w (removed at the end of its job)", x.name, x.dir, ErrClosed)
}

// closedErr is the error of operations once the scratch is removed (or
// being closed after a fault they have not met yet).
func (x *Scratch) closedErr() error {
	if x.removed {
		return x.removedErr()
	}
	return fmt.Errorf("spill store of %s in %s: %w", x.name, x.dir, ErrClosed)
}

func (x *Scratch) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closeLocked()
}

// closeLocked refuses new operations, waits for those under way, and
// closes the database.
func (x *Scratch) closeLocked() error {
	if x.db == nil {
		return nil
	}
	x.closing = true
	for x.active > 0 {
		x.idle.Wait()
	}
	if x.db == nil {
		return nil // another close (a fault's, the job end's) finished while this one waited
	}
	x.closeViewsLocked()
	err := x.db.Close()
	x.db, x.closing = nil, false
	return err
}

// acquire returns the open database for one operation, to release after;
// nil (and no error) before the first write.
func (x *Scratch) acquire() (*pebble.DB, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.fs.err(); err != nil {
		return nil, x.faultErr(err)
	}
	switch {
	case x.removed, x.closing:
		return nil, x.closedErr()
	case x.db != nil:
		x.active++
	}
	return x.db, nil
}

func (x *Scratch) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.active--; x.active == 0 {
		x.idle.Broadcast()
	}
}

// do runs f on the open database, unless there was a fault; a fault met
// during f is f's error, as what f read may be incomplete. Before the
// first write there is nothing to read or delete: do returns nil without
// calling f.
func (x *Scratch) do(f func(db *pebble.DB) error) error {
	db, err := x.acquire()
	if err != nil || db == nil {
		return err
	}
	defer x.release()
	err = f(db)
	if ferr := x.fs.err(); ferr != nil {
		return x.faultErr(ferr)
	}
	return err
}

// write applies b once there is room for its n bytes.
func (x *Scratch) write(b *pebble.Batch, n int) error {
	if err := x.open(); err != nil {
		return err
	}
	if err := x.st.roomFor(x.dir, n); err != nil {
		return err
	}
	if err := x.settle(n); err != nil {
		return err
	}
	err := x.do(func(db *pebble.DB) error { return db.Apply(b, pebble.NoSync) })
	if err == nil {
		x.st.spilled.Add(uint64(n))
	}
	return err
}

// sizeEvery is how many bytes may be written, over all Scratches, between
// two readings of the disk's free space: a sixteenth of the reserve, so
// that what is written between readings (with Pebble's write
// amplification) stays within it.
func (s *Store) sizeEvery() int64 { return int64(max(s.reserve/16, 1)) }

// roomFor refuses, with ENOSPC, n bytes that would leave less than the
// reserve free on the disk of dir: the job records share the disk, and
// Pebble cannot go on after a failed write of theirs (fault.go). It reads
// the free space once every sizeEvery bytes; a file system that cannot
// tell it is not refused.
func (s *Store) roomFor(dir string, n int) error {
	if s.unsized.Add(int64(n)) < s.sizeEvery() {
		return nil
	}
	s.unsized.Store(0)
	u, err := s.fs.GetDiskUsage(dir)
	if err != nil || u.AvailBytes >= s.reserve+uint64(n) {
		return nil
	}
	s.unsized.Store(s.sizeEvery()) // read it again on the next write
	return fmt.Errorf("the disk of %s has %s free, less than the %s kept for job records: %w",
		dir, humanize.IBytes(u.AvailBytes), humanize.IBytes(s.reserve), syscall.ENOSPC)
}

// settle holds a write back, once every memtable's worth of bytes, while
// more memtables wait for flushing than maxMemTables, as Pebble's own
// stall would; it gives up with the fault if one comes.
func (x *Scratch) settle(n int) error {
	if x.unqueued.Add(int64(n)) < scratchMemTable {
		return nil
	}
	x.unqueued.Store(0)
	for {
		x.pmu.Lock()
		woken := x.progress
		x.pmu.Unlock()
		count := 0
		err := x.do(func(db *pebble.DB) error { count = int(db.Metrics().MemTable.Count); return nil })
		if err != nil || count < maxMemTables {
			return err
		}
		select {
		case <-woken:
		case <-time.After(time.Second): // a flush that ended unseen
		}
	}
}

// wake lets the writers settle holds back look again.
func (x *Scratch) wake() {
	x.pmu.Lock()
	defer x.pmu.Unlock()
	close(x.progress)
	x.progress = make(chan struct{})
}

// removeScratches removes every Scratch still open, at the store's Close.
func (s *Store) removeScratches() error {
	s.smu.Lock()
	open := make([]*Scratch, 0, len(s.scratches))
	for x := range s.scratches {
		open = append(open, x)
	}
	s.smu.Unlock()
	var err error
	for _, x := range open {
		if rerr := x.Remove(); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// emptyScratch removes what Scratches of an earlier process left (a
// crash, or a kill before Close).
func emptyScratch(s *Store) error {
	dir := s.fs.PathJoin(s.dir, scratchDir)
	if err := s.fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("emptying the scratch dir %s: %w", dir, err)
	}
	return nil
}
