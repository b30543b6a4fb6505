package store

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dustin/go-humanize"
)

// scratchDir is where, under the state dir, Spaces keep their data.
const scratchDir = "scratch"

// scratch is the Pebble instance the Spaces write to, apart from the job
// records so that a disk fault while spilling fails the spilling jobs
// and nothing else:
//   - it has no write-ahead log (its data is worthless after a crash: Open
//     empties it), so its writes only reach the disk in Pebble's
//     background flushes, where a failure is an error, not a fatal one;
//   - Pebble's write stalls are off, because a write stalled in Pebble is
//     never woken if the flush it waits for fails: settle holds writes
//     back instead, and gives up on a fault;
//   - on its first disk fault it is closed (Pebble would retry the failed
//     flush in a busy loop), and every Space operation after returns the
//     fault until the server restarts.
type scratch struct {
	dir     string
	fs      *faultFS
	log     *slog.Logger
	reserve uint64 // free disk space a write leaves (roomFor)

	mu sync.RWMutex // operations hold it to read; closing, to write
	db *pebble.DB   // nil once closed

	written  atomic.Uint64 // bytes written, for WrittenBytes
	unsized  atomic.Int64  // bytes written since the free space was read
	unqueued atomic.Int64  // bytes written since the memtables were counted

	pmu      sync.Mutex
	progress chan struct{} // closed (and replaced) when a flush ends or on a fault
}

const (
	scratchMemTable = 4 << 20 // Pebble's default
	// maxMemTables is how many memtables (the one written and those queued
	// for flushing) settle lets a write add to.
	maxMemTables = 3
)

// openScratch empties the scratch dir of dir and opens it.
func openScratch(dir string, fs vfs.FS, reserve uint64, log *slog.Logger) (*scratch, error) {
	sc := &scratch{dir: fs.PathJoin(dir, scratchDir), log: log, reserve: reserve, progress: make(chan struct{})}
	sc.fs = newFaultFS(fs, sc.faulted)
	if err := fs.RemoveAll(sc.dir); err != nil {
		return nil, fmt.Errorf("emptying the scratch dir %s: %w", sc.dir, err)
	}
	sc.unsized.Store(sc.sizeEvery())
	db, err := pebble.Open(sc.dir, &pebble.Options{FS: sc.fs, DisableWAL: true, Logger: pebbleLogger{log},
		MemTableSize: scratchMemTable, MemTableStopWritesThreshold: 1 << 10, L0StopWritesThreshold: 1 << 10,
		EventListener: &pebble.EventListener{FlushEnd: func(pebble.FlushInfo) { sc.wake() },
			// A damaged file fails the read that found it (Pebble's default
			// would end the process).
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				log.Error("store: a spill file is damaged", "file", info.Path, "details", info.Details.Error())
			}}})
	if err != nil {
		return nil, fmt.Errorf("opening the scratch store in %s: %w", sc.dir, err)
	}
	sc.db = db
	return sc, nil
}

// faulted is the scratch faultFS's report of its first fault.
func (sc *scratch) faulted(cause error) {
	sc.log.Error("store: disk fault while spilling; jobs that spill fail until the server restarts",
		"dir", sc.dir, "err", cause)
	sc.wake()
	go sc.close()
}

// err is the error every operation gets after a fault, or nil.
func (sc *scratch) err() error {
	if cause := sc.fs.err(); cause != nil {
		return fmt.Errorf("spill store in %s stopped after a %w (restart the server once the disk is fixed): %w", sc.dir, ErrDiskFault, cause)
	}
	return nil
}

func (sc *scratch) close() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.db == nil {
		return nil
	}
	err := sc.db.Close()
	sc.db = nil
	return err
}

// do runs f on the open database, unless there was a fault; a fault met
// during f is f's error, as what f read may be incomplete.
func (sc *scratch) do(f func(db *pebble.DB) error) error {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	if err := sc.err(); err != nil {
		return err
	}
	if sc.db == nil {
		return ErrClosed
	}
	err := f(sc.db)
	if ferr := sc.err(); ferr != nil {
		return ferr
	}
	return err
}

// write applies b once there is room for its n bytes.
func (sc *scratch) write(b *pebble.Batch, n int) error {
	if err := sc.roomFor(n); err != nil {
		return err
	}
	if err := sc.settle(n); err != nil {
		return err
	}
	err := sc.do(func(db *pebble.DB) error { return db.Apply(b, pebble.NoSync) })
	if err == nil {
		sc.written.Add(uint64(n))
	}
	return err
}

// sizeEvery is how many bytes may be written between two readings of the
// disk's free space: a sixteenth of the reserve, so that what is written
// between readings (with Pebble's write amplification) stays within it.
func (sc *scratch) sizeEvery() int64 { return int64(max(sc.reserve/16, 1)) }

// roomFor refuses, with ENOSPC, n bytes that would leave less than the
// reserve free on the disk: the job records share the disk, and Pebble
// cannot go on after a failed write of theirs (fault.go). It reads the
// free space once every sizeEvery bytes; a file system that cannot tell
// it is not refused.
func (sc *scratch) roomFor(n int) error {
	if sc.unsized.Add(int64(n)) < sc.sizeEvery() {
		return nil
	}
	sc.unsized.Store(0)
	u, err := sc.fs.GetDiskUsage(sc.dir)
	if err != nil || u.AvailBytes >= sc.reserve+uint64(n) {
		return nil
	}
	sc.unsized.Store(sc.sizeEvery()) // read it again on the next write
	return fmt.Errorf("the disk of %s has %s free, less than the %s kept for job records: %w",
		sc.dir, humanize.IBytes(u.AvailBytes), humanize.IBytes(sc.reserve), syscall.ENOSPC)
}

// settle holds a write back, once every memtable's worth of bytes, while
// more memtables wait for flushing than maxMemTables, as Pebble's own
// stall would; it gives up with the fault if one comes.
func (sc *scratch) settle(n int) error {
	if sc.unqueued.Add(int64(n)) < scratchMemTable {
		return nil
	}
	sc.unqueued.Store(0)
	for {
		sc.pmu.Lock()
		woken := sc.progress
		sc.pmu.Unlock()
		count := 0
		err := sc.do(func(db *pebble.DB) error { count = int(db.Metrics().MemTable.Count); return nil })
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
func (sc *scratch) wake() {
	sc.pmu.Lock()
	defer sc.pmu.Unlock()
	close(sc.progress)
	sc.progress = make(chan struct{})
}
