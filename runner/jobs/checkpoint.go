package jobs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/beam-runner/beam-runner/runner/store"
)

// A job's checkpoints are written in two synced steps: the checkpoint
// under "k/<n>" (n a big-endian uint64 counting the job's checkpoints),
// then "kp", the n to resume from, with the previous checkpoint deleted.
// A checkpoint whose write or sync failed is thus never pointed to: a
// restart resumes from the one before, even if the failed one's bytes
// reached the disk after all. Older builds kept one checkpoint under
// "c", which is read when there is no "kp".
const (
	ckptPart    = "k/"
	ckptPtrPart = "kp"
	oldCkptPart = "c"
)

func ckptKey(id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(jobKey(id, ckptPart), n)
}

// queueCheckpoint queues data's write as the job's checkpoint to resume
// from; the returned channel yields the write's outcome.
func (jl *journal) queueCheckpoint(data []byte) <-chan error {
	res := make(chan error, 1)
	jl.w.enqueue(func() { res <- jl.checkpoint(data) })
	return res
}

// checkpoint saves data as the job's checkpoint to resume from, on the
// writer (or alone, in tests).
func (jl *journal) checkpoint(data []byte) error {
	n := jl.ckpt + 1
	b := jl.st.NewBatch()
	b.Set(ckptKey(jl.id, n), data)
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("job %s: checkpoint %d not saved: %w", jl.id, n, err)
	}
	b = jl.st.NewBatch()
	b.Set(jobKey(jl.id, ckptPtrPart), binary.BigEndian.AppendUint64(nil, n))
	b.Delete(ckptKey(jl.id, jl.ckpt))
	b.Delete(jobKey(jl.id, oldCkptPart))
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("job %s: checkpoint %d saved but not made the one to resume from: %w", jl.id, n, err)
	}
	jl.ckpt = n
	return nil
}

// dropCheckpoints deletes the job's checkpoints, in b.
func dropCheckpoints(b *store.Batch, id string) {
	b.DeletePrefix(jobKey(id, ckptPart))
	b.Delete(jobKey(id, ckptPtrPart))
	b.Delete(jobKey(id, oldCkptPart))
}

// savedCheckpoints collects a job's checkpoint parts as loadSaved reads
// them.
type savedCheckpoints struct {
	byNum  map[uint64][]byte
	ptr    uint64
	hasPtr bool
	old    []byte
}

// add takes the record part part, valued v, if it is a checkpoint's.
func (c *savedCheckpoints) add(part string, v []byte) (ok bool, err error) {
	switch {
	case part == oldCkptPart:
		c.old = bytes.Clone(v)
	case part == ckptPtrPart:
		if len(v) != 8 {
			return true, fmt.Errorf("checkpoint pointer of %d bytes, want 8", len(v))
		}
		c.ptr, c.hasPtr = binary.BigEndian.Uint64(v), true
	case strings.HasPrefix(part, ckptPart) && len(part) == len(ckptPart)+8:
		if c.byNum == nil {
			c.byNum = map[uint64][]byte{}
		}
		c.byNum[binary.BigEndian.Uint64([]byte(part[len(ckptPart):]))] = bytes.Clone(v)
	default:
		return false, nil
	}
	return true, nil
}

// resume is the checkpoint to resume from (nil: none) and its number.
func (c *savedCheckpoints) resume() ([]byte, uint64) {
	if !c.hasPtr {
		return c.old, 0
	}
	return c.byNum[c.ptr], c.ptr
}
