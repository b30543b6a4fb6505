package jobs

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

var ckptA, ckptB = bytes.Repeat([]byte("A"), 3000), bytes.Repeat([]byte("B"), 5000)

func openOn(t *testing.T, fs vfs.FS) *store.Store {
	t.Helper()
	st, err := store.Open("/state", nil, store.WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// resumeFrom reopens the store on fs, as a restarted server does, and
// returns job's checkpoint to resume from and all its checkpoints kept.
func resumeFrom(t *testing.T, fs vfs.FS, job string) ([]byte, map[uint64][]byte) {
	t.Helper()
	st := openOn(t, fs)
	defer st.Close()
	all, err := loadSaved(st)
	if err != nil {
		t.Fatal(err)
	}
	sv := all[job]
	if sv == nil {
		t.Fatalf("job %s has no record after the restart", job)
	}
	ckpt, _ := sv.ckpts.resume()
	return ckpt, sv.ckpts.byNum
}

// TestCheckpointSyncFault: a checkpoint whose fsync fails is reported
// not saved, and a restart resumes from the one before, even when every
// byte written without a sync reached the disk after all (the clone keeps
// all unsynced data): the failed checkpoint is there, but not pointed to.
func TestCheckpointSyncFault(t *testing.T) {
	mem := vfs.NewCrashableMem()
	syncs := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) && strings.HasSuffix(op.Path, ".log") {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	})}
	st := openOn(t, errorfs.Wrap(mem, syncs))
	jl := &journal{st: st, id: "j1", log: slog.Default()}
	if err := jl.checkpoint(ckptA); err != nil {
		t.Fatal(err)
	}
	syncs.On()
	err := jl.checkpoint(ckptB)
	if err == nil || !strings.Contains(err.Error(), "checkpoint 2 not saved") || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("checkpoint whose sync failed: err = %v, want it not saved, naming EIO", err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
	st.Close()
	got, kept := resumeFrom(t, crashed, "j1")
	if !bytes.Equal(kept[2], ckptB) {
		t.Fatalf("the failed checkpoint's bytes are not on the crashed disk (kept %d checkpoints): the test shows nothing", len(kept))
	}
	if !bytes.Equal(got, ckptA) {
		t.Fatalf("resumed from %.10q…, want the checkpoint before the failed one", got)
	}
}

// crasher takes crash clones of mem (one per cfg) just before the op
// numbered at, counting from when it is armed: a kill -9 at that point.
type crasher struct {
	mem    *vfs.MemFS
	cfgs   []vfs.CrashCloneCfg
	at     int64
	armed  atomic.Bool
	n      atomic.Int64
	clones []*vfs.MemFS
}

func (c *crasher) String() string { return "crasher" }

func (c *crasher) MaybeError(errorfs.Op) error {
	if c.armed.Load() && c.n.Add(1)-1 == c.at {
		c.crash()
	}
	return nil
}

func (c *crasher) crash() {
	for _, cfg := range c.cfgs {
		c.clones = append(c.clones, c.mem.CrashClone(cfg))
	}
}

// TestCheckpointKill9: the server is killed at every file system
// operation of a checkpoint in turn, with none, some or all of what was
// written unsynced reaching the disk. Each restart resumes from either
// the checkpoint before or the new one, whole.
func TestCheckpointKill9(t *testing.T) {
	cfgs := func(seed int64) []vfs.CrashCloneCfg {
		return []vfs.CrashCloneCfg{{UnsyncedDataPercent: 0},
			{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(seed), 1))},
			{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(uint64(seed), 1))}}
	}
	seen := map[string]int{}
	for at := int64(0); ; at++ {
		c := &crasher{mem: vfs.NewCrashableMem(), cfgs: cfgs(at), at: at}
		st := openOn(t, errorfs.Wrap(c.mem, c))
		jl := &journal{st: st, id: "j1", log: slog.Default()}
		if err := jl.checkpoint(ckptA); err != nil {
			t.Fatal(err)
		}
		c.armed.Store(true)
		if err := jl.checkpoint(ckptB); err != nil {
			t.Fatal(err)
		}
		c.armed.Store(false)
		past := c.clones == nil // at is past the checkpoint's last op
		if past {
			c.crash()
		}
		st.Close()
		for i, fs := range c.clones {
			got, _ := resumeFrom(t, fs, "j1")
			switch {
			case bytes.Equal(got, ckptA):
				seen["old"]++
			case bytes.Equal(got, ckptB):
				seen["new"]++
			default:
				t.Errorf("killed before op %d (unsynced data kept: %d%%): resumed from %d bytes %.10q…, want the old or the new checkpoint",
					at, c.cfgs[i].UnsyncedDataPercent, len(got), got)
			}
		}
		if past {
			if ops := c.n.Load(); ops < 4 {
				t.Fatalf("a checkpoint took %d file system operations; want at least a write and a sync for each of its two steps", ops)
			}
			break
		}
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("restarts resumed old %d, new %d times; want both seen", seen["old"], seen["new"])
	}
	t.Logf("restarts resumed from the old checkpoint %d times, the new %d", seen["old"], seen["new"])
}

// TestOldCheckpointResumed: a record an older build wrote, with its one
// checkpoint under "c", resumes from it; the next checkpoint replaces it.
func TestOldCheckpointResumed(t *testing.T) {
	mem := vfs.NewMem()
	st := openOn(t, mem)
	b := st.NewBatch()
	b.Set(jobKey("j1", oldCkptPart), ckptA)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got, _ := resumeFrom(t, mem, "j1"); !bytes.Equal(got, ckptA) {
		t.Fatalf("resumed from %.10q…, want the old build's checkpoint", got)
	}
	st = openOn(t, mem)
	if err := (&journal{st: st, id: "j1", log: slog.Default()}).checkpoint(ckptB); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got, _ := resumeFrom(t, mem, "j1"); !bytes.Equal(got, ckptB) {
		t.Fatalf("resumed from %.10q…, want the new checkpoint", got)
	}
}

// TestCheckpointsGivenBackAtEnd: a job's checkpoints take disk space while
// it runs; once its terminal state is recorded they are gone, and so is
// their space, within 30 s and without a restart. (Pebble keeps up to
// three write-ahead logs for reuse, each as large as the largest batch it
// held: that much stays.)
func TestCheckpointsGivenBackAtEnd(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	jl := &journal{st: st, id: "j1", log: slog.Default()}
	const size, n = 16 << 20, 4
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(data) // Pebble compresses; this it cannot
	for i := range n {
		data[0] = byte(i)
		if err := jl.checkpoint(data); err != nil {
			t.Fatal(err)
		}
	}
	during := storeUsage(t, st).Jobs
	jl.event(0, &jobpb.JobMessagesResponse{Response: &jobpb.JobMessagesResponse_StateResponse{
		StateResponse: &jobpb.JobStateEvent{State: jobpb.JobState_DONE}}}, nil)
	const want = (n - 1) * size // every table of a checkpoint, at least
	var after int64
	testwait.NoErr(t, 30*time.Second, "the job store to give back the checkpoints' space", func() error {
		if after = storeUsage(t, st).Jobs; during-after < want {
			return fmt.Errorf("job store: %d bytes with %d checkpoints of %d bytes, %d bytes after the job ended; want at least %d given back",
				during, n, size, after, want)
		}
		return nil
	})
	t.Logf("job store: %d bytes with the checkpoints, %d after the job ended", during, after)
	all, err := loadSaved(st)
	if err != nil {
		t.Fatal(err)
	}
	if ckpt, _ := all["j1"].ckpts.resume(); ckpt != nil {
		t.Fatalf("an ended job still has a checkpoint of %d bytes", len(ckpt))
	}
}

func storeUsage(t *testing.T, st *store.Store) store.Usage {
	t.Helper()
	u, err := st.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u
}
