package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/spec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func init() { beam.RegisterFunction(emitSpillValues) }

// spillValues values of a KiB each under seven keys: 32 MiB, more than
// the spill holds in memory before it writes to the disk.
const spillValues = 32 << 10

func emitSpillValues(_ []byte, emit func(int, string)) {
	v := strings.Repeat("v", 1<<10)
	for i := 0; i < spillValues; i++ {
		emit(i%7, v)
	}
}

// spillingPipeline groups spillValues values: under a 4 KiB
// --memory_limit its GroupByKey and pending input spill to the store.
func spillingPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	grouped := beam.GroupByKey(s, beam.ParDo(s, emitSpillValues, beam.Impulse(s)))
	passert.Count(s, beam.ParDo(s, sumLengths, grouped), "sums", 7)
	return p
}

// smallPipeline fits in any budget, so it never spills.
func smallPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	passert.Equals(s, beam.ParDo(s, formatCount, stats.Count(s, beam.Create(s, "a", "b", "a"))), "a:2", "b:1")
	return p
}

// TestSpillDiskFault: a job whose spill meets a full disk, or a disk that
// refuses a write (ENOSPC injected into the writes of the spilled data),
// fails naming the cause, while a job beside it on the same executor and
// store succeeds, and so does one started after.
func TestSpillDiskFault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func() (fs vfs.FS, fail func())
		// mayFinish: the fault may miss the job. Spill writes are queued
		// and read back from the queue until applied, so a job can end
		// before its writer flushes into the refused .sst write; its
		// output is then exact (the pipeline's passert checks it).
		mayFinish bool
	}{
		{"full disk", func() (vfs.FS, func()) {
			mem := vfs.NewMem()
			return mem, func() { mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 1 << 30}) }
		}, false},
		{"failed spill write", func() (vfs.FS, func()) {
			tog := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".sst") {
					return fmt.Errorf("injected: %w", syscall.ENOSPC)
				}
				return nil
			})}
			return errorfs.Wrap(vfs.NewMem(), tog), tog.On
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, fail := tc.setup()
			st, err := store.Open("/state", nil, store.WithFS(fs))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			e := New(Options{Memory: spec.Memory{Store: st, Limit: 4 << 10, BoundPending: true}})
			fail()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			spilled := make(chan error, 1)
			go func() { spilled <- runOn(ctx, e, spillingPipeline(), &jobs.Job{ID: "spills", Name: "spills"}, nil) }()
			if err := runOn(ctx, e, smallPipeline(), &jobs.Job{ID: "beside", Name: "beside"}, nil); err != nil {
				t.Errorf("the job beside the failing one: %v", err)
			}
			err = <-spilled
			t.Log(err)
			switch {
			case err == nil && tc.mayFinish:
				t.Log("the spilling job ended before its spill writer met the fault; passert checked its output")
			case err == nil || !strings.Contains(err.Error(), "no space left on device"):
				t.Errorf("the spilling job: err = %v, want it failed naming ENOSPC", err)
			}
			if err := runOn(ctx, e, smallPipeline(), &jobs.Job{ID: "after", Name: "after"}, nil); err != nil {
				t.Errorf("a job after the fault: %v", err)
			}
			noSpillLeft(t, st) // the failed job's spill too
		})
	}
}
