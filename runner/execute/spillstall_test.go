package execute

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/testsupport/diskstall"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func init() {
	beam.RegisterFunction(waitForStall)
	beam.RegisterFunction(markOtherDone)
	beam.RegisterFunction(formatKeySum)
}

// stallGates let TestStalledSpillHoldsNoDriver's other branch start once
// the spill is held and say when it ran (the loopback SDK harness runs in
// this process).
var stallGates struct {
	sync.Mutex
	open, done chan struct{}
}

func gates() (open, done chan struct{}) {
	stallGates.Lock()
	defer stallGates.Unlock()
	return stallGates.open, stallGates.done
}

func waitForStall(_ []byte, emit func(int, string)) {
	open, _ := gates()
	<-open
	emit(1, "other")
}

func markOtherDone(k int, vs func(*string) bool) {
	var v string
	if vs(&v) && k == 1 && v == "other" {
		_, done := gates()
		select {
		case <-done: // a retried bundle
		default:
			close(done)
		}
	}
}

func formatKeySum(k int, vs func(*string) bool) string {
	return fmt.Sprintf("%d:%d", k, sumLengths(k, vs))
}

// stallPipeline: spillValues values of a KiB under seven keys through a
// GroupByKey, each key's sum checked exactly; beside it, a branch whose
// first bundle waits for the test's gate and whose GroupByKey's bundle,
// a stage of its own, says it ran.
func stallPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	grouped := beam.GroupByKey(s, beam.ParDo(s, emitSpillValues, beam.Impulse(s)))
	var want []any
	for k := range 7 {
		n := spillValues / 7
		if k < spillValues%7 {
			n++
		}
		want = append(want, fmt.Sprintf("%d:%d", k, n<<10))
	}
	passert.Equals(s, beam.ParDo(s, formatKeySum, grouped), want...)
	other := beam.GroupByKey(s, beam.ParDo(s, waitForStall, beam.Impulse(s)))
	beam.ParDo0(s, markOtherDone, other)
	return p
}

// TestStalledSpillHoldsNoDriver: while the disk holds every write of a
// job's spill (its first write, opening the spill's files, never ends),
// the job goes on: the driver commits bundles, cuts new bundles of other
// stages and keeps its statistics, as what it would spill waits in
// memory. Once the disk goes on, the job ends with its output exact.
func TestStalledSpillHoldsNoDriver(t *testing.T) {
	open, done := make(chan struct{}), make(chan struct{})
	stallGates.Lock()
	stallGates.open, stallGates.done = open, done
	stallGates.Unlock()
	stall := diskstall.New(func(op errorfs.Op) bool {
		return diskstall.Writes(op) && strings.Contains(op.Path, "/scratch/")
	})
	st, err := store.Open("/state", nil, store.WithFS(stall.Wrap(vfs.NewMem())))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	defer stall.Release() // first: a failed test must not leave the store stuck
	stall.Arm()
	e := New(Options{Memory: spec.Memory{Store: st, Limit: 4 << 10, BoundPending: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := &jobs.Job{ID: "stalled", Name: "stalled"}
	ran := make(chan error, 1)
	go func() { ran <- runOn(ctx, e, stallPipeline(), job, nil) }()
	testwait.Closed(t, 60*time.Second, "the job's spill to be held by the disk", stall.Stalled)
	close(open)
	testwait.Closed(t, 60*time.Second, "the other branch's GroupByKey bundle while the spill is held", done)
	if stall.Released() {
		t.Fatal("released early: the test shows nothing")
	}
	testwait.Until(t, 20*time.Second, "the other branch's bundles counted done while the spill is held", func() bool {
		return bundlesDone(job, "markOtherDone") > 0
	})
	stall.Release()
	if err := testwait.Recv(t, 60*time.Second, "the job to end once the disk goes on", ran); err != nil {
		t.Fatalf("job: %v", err)
	}
	if stall.Held() == 0 {
		t.Error("no spill write was held")
	}
}

// bundlesDone is how many bundles the stage running the named transform
// finished, in the job's statistics.
func bundlesDone(j *jobs.Job, transform string) int64 {
	for _, s := range j.Stats().Snapshot().Stages {
		for _, name := range s.Transforms {
			if strings.Contains(name, transform) {
				return s.BundlesDone
			}
		}
	}
	return 0
}
