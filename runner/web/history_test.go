package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/chromedp/chromedp"
)

func init() {
	register.Function1x2(flakyOnce)
}

// flakyFailures is how many more times flakyOnce fails, as the executor's
// retry tests' flaky DoFn: the workers run in the test's process.
var flakyFailures atomic.Int32

// flakyOnce passes elements through but fails while flakyFailures lasts.
func flakyOnce(n int64) (int64, error) {
	if flakyFailures.Add(-1) >= 0 {
		return 0, fmt.Errorf("injected failure on element %d", n)
	}
	return n, nil
}

// A streaming job with a --state_dir checkpoints every 200 ms; one of its
// bundles fails once and is retried on the other worker; then it is
// cancelled at a savepoint. Its page shows the periodic checkpoints with
// their sizes, the savepoint (trigger and directory) in both the history
// and the savepoints, and the failure as one exception group naming its
// cause, transform, worker and attempt.
func TestJobPageShowsCheckpointsAndExceptions(t *testing.T) {
	tap := &logTap{}
	env := jobtest.StartWith(t, &jobtest.Options{Logger: slog.New(tap), StateDir: t.TempDir(), CheckpointInterval: 200 * time.Millisecond})
	tap.dump(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	flakyFailures.Store(1)
	defer flakyFailures.Store(0)
	id, _, err := env.SubmitWith(ctx, "history", map[string]any{jobs.WorkersOption: "2"}, func(s beam.Scope) {
		src := beam.ParDo(s, &pacedSource{N: 1 << 30, PerTick: 10, EveryMs: 50}, beam.Impulse(s))
		beam.ParDo0(s, discardInt, beam.ParDo(s, flakyOnce, beam.Reshuffle(s, src)))
	})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "periodic checkpoints and a retried failure", func() bool {
		var d jobs.Detail
		getJSON(t, env.WebURL+"/api/jobs/"+id, &d)
		return len(d.Stats.Checkpoints) >= 3 && len(d.Stats.Exceptions) == 1
	})
	if st := jobState(t, env, id); st != jobpb.JobState_RUNNING {
		t.Fatalf("the job is %v after its bundle's retry, want RUNNING", st)
	}
	dir := filepath.Join(t.TempDir(), "savepoint")
	if err := savepointRPC(ctx, env.Endpoint, id, dir, "cancel"); err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_CANCELLED, time.Minute); err != nil {
		t.Fatal(err)
	}
	page := historyPage(t, env, id)

	checkCheckpointRows(t, page, dir)
	if len(page.Exceptions) != 1 {
		t.Fatalf("exception rows = %+v, want one group", page.Exceptions)
	}
	ex := page.Exceptions[0]
	if !strings.Contains(ex.Cause, "injected failure on element") || !strings.Contains(ex.Transform, "flakyOnce") ||
		ex.Worker == "" || ex.Attempt != "1" || ex.Count != "1" || ex.First == "" || ex.Last == "" {
		t.Errorf("exception row = %+v; want the injected cause in flakyOnce, a worker, attempt 1, count 1, times", ex)
	}
}

// checkCheckpointRows checks the page's history (newest first) ends in
// the cancelling savepoint into dir after periodic checkpoints that
// hold something, and lists that savepoint.
func checkCheckpointRows(t *testing.T, page historyView, dir string) {
	t.Helper()
	rows := page.Checkpoints
	if len(rows) < 4 {
		t.Fatalf("checkpoint rows = %+v, want periodic ones and the savepoint", rows)
	}
	if top := rows[0]; top.Trigger != jobs.TriggerCancel || top.Dir != dir || top.Bytes <= 0 {
		t.Errorf("newest checkpoint row = %+v, want the %s into %s with its size", top, jobs.TriggerCancel, dir)
	}
	for _, r := range rows[1:] {
		if r.Trigger != jobs.TriggerInterval || r.Bytes <= 0 || r.Dir != "" || r.Ms == "" {
			t.Errorf("checkpoint row %+v, want a periodic checkpoint with its size and duration", r)
		}
	}
	if len(page.Savepoints) != 1 || page.Savepoints[0] != dir {
		t.Errorf("savepoint directories = %q, want [%s]", page.Savepoints, dir)
	}
}

type checkpointRow struct {
	Trigger string `json:"trigger"`
	Bytes   int64  `json:"bytes"`
	Ms      string `json:"ms"`
	Dir     string `json:"dir"`
}

type exceptionRow struct {
	Cause, Stage, Transform, Worker, Attempt, Count, First, Last string
}

// historyView is the job page's checkpoint history, savepoints and
// exceptions, as shown.
type historyView struct {
	Checkpoints []checkpointRow `json:"checkpoints"`
	Savepoints  []string        `json:"savepoints"`
	Exceptions  []exceptionRow  `json:"exceptions"`
}

// historyPage opens the job's page in Chromium and reads its checkpoint
// history, savepoints and exceptions.
func historyPage(t *testing.T, env *jobtest.Env, id string) historyView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx, stop := browser(ctx, t, chromiumPath(t))
	defer stop()
	if err := chromedp.Do(bctx, chromedp.Navigate(env.WebURL+"/#/job/"+id),
		chromedp.WaitVisible(`#savepoints-body tr`), chromedp.WaitVisible(`#exceptions-body tr`)); err != nil {
		t.Fatalf("waiting for the job page's checkpoints and exceptions: %v", err)
	}
	v, err := chromedp.Run(bctx, chromedp.Evaluate[historyView](`(() => {
		const cells = (tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent);
		return {
			checkpoints: [...document.querySelectorAll("#checkpoints-body tr")].map((tr) => ({
				trigger: tr.dataset.trigger, bytes: Number(tr.dataset.bytes), ms: cells(tr)[3], dir: cells(tr)[4]})),
			savepoints: [...document.querySelectorAll("#savepoints-body tr")].map((tr) => cells(tr)[4]),
			exceptions: [...document.querySelectorAll("#exceptions-body tr")].map((tr) => {
				const c = cells(tr);
				return {Cause: c[0], Stage: c[1], Transform: c[2], Worker: c[3], Attempt: c[4], Count: c[5], First: c[6], Last: c[7]};
			}),
		};
	})()`))
	if err != nil {
		t.Fatalf("reading the job page's checkpoints and exceptions: %v", err)
	}
	return v
}
