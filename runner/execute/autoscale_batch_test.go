package execute

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
)

func init() {
	beam.RegisterFunction(slowSum)
	beam.RegisterFunction(keyZero)
}

func keyZero(n int64) (int, int64) { return 0, n }

// slowSum adds a group's values after 1.5 s: the job's one-bundle tail.
func slowSum(_ int, vs func(*int64) bool) int64 {
	time.Sleep(1500 * time.Millisecond)
	var sum, v int64
	for vs(&v) {
		sum += v
	}
	return sum
}

// A batch job under --autoscaling=ds2 starts at the least workers, grows
// while its measured remaining work (300 elements of 20 ms after a
// Reshuffle) would take longer than the 200 ms it is sized to finish in,
// and gives the workers back in its tail, where one group's bundle is
// all that is left; the sum comes out right.
func TestAutoscalingBatchGrowsAndGivesBack(t *testing.T) {
	const n = 300
	p, s := beam.NewPipelineWithRoot()
	nums := make([]int64, n)
	for i := range nums {
		nums[i] = int64(i)
	}
	slow := beam.ParDo(s, slowInt, beam.Reshuffle(s, beam.CreateList(s, nums)))
	sum := beam.ParDo(s, slowSum, beam.GroupByKey(s, beam.ParDo(s, keyZero, slow)))
	passert.Equals(s, sum, int64(n*(n-1)/2))
	passert.Count(s, slow, "slow", n)
	var log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := New(Options{Parallelism: 4, RateWindow: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	err := runOn(ctx, e, p, &jobs.Job{ID: "test", Name: t.Name()}, map[string]any{
		"autoscaling": "ds2", "min_workers": "1", "max_workers": "3",
		"autoscaling_interval": "300ms", "batch_target_time": "200ms"})
	out := log.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !regexp.MustCompile(`msg=autoscaling job=\S+ env=\S+ from=1 to=[23] why="batch: \S+ busy s of remaining work to finish in 0.2s: scale up`).MatchString(out) {
		t.Errorf("no batch scale-up from the least workers logged:\n%s", out)
	}
	if !strings.Contains(out, "scale-up: worker takes bundles") {
		t.Errorf("no new worker connected:\n%s", out)
	}
	if !regexp.MustCompile(`msg=autoscaling job=\S+ env=\S+ from=[23] to=1 why="batch: (.*tail: 1 bundles can run|no work left)`).MatchString(out) {
		t.Errorf("no scale-down to the least workers in the tail logged:\n%s", out)
	}
	if !strings.Contains(out, "scale-down: worker drained and stopped") {
		t.Errorf("no worker drained and stopped while the job ran:\n%s", out)
	}
}
