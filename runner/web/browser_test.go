package web_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/chromedp/chromedp"
)

// stageLook is one stage as the job page's graph shows it.
type stageLook struct {
	ID          string  `json:"id"`
	Kind        string  `json:"kind"`
	Watermark   float64 `json:"wm"`
	ElementsIn  float64 `json:"in"`
	ElementsOut float64 `json:"out"`
}

const readGraph = `[...document.querySelectorAll("#graph g.stage")].map(g => ({
	id: g.dataset.stage, kind: g.dataset.kind, wm: Number(g.dataset.watermark),
	in: Number(g.dataset.elementsIn), out: Number(g.dataset.elementsOut)}))`

// TestBrowserDrainsStreamingJob drives the web UI in headless Chromium
// while a streaming job runs: the list shows it RUNNING, its page shows
// the stage graph with watermarks and element counts that grow between two
// looks, and the Drain button drains it to DRAINED. Screenshots go to
// .work/web/ at the repository root. Chromium is required: without it the
// test fails (scripts/setup.sh installs it).
func TestBrowserDrainsStreamingJob(t *testing.T) {
	chromium := chromiumPath(t)
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "webui-streaming", jobtest.Streaming(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	shots := screenshotDir(t)

	bctx, stop := browser(ctx, t, chromium)
	defer stop()
	var look1, look2 []stageLook
	var rates []rateLook
	var listShot, jobShot, drainedShot []byte
	steps := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"job list shows the job RUNNING", func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx,
				chromedp.Navigate(env.WebURL+"/#/"),
				chromedp.WaitVisible(fmt.Sprintf(`tr[data-job=%q][data-state="RUNNING"]`, id)),
			); err != nil {
				return err
			}
			listShot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
			return err
		}},
		{"job page shows the stage graph with counts", func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx,
				chromedp.Click(fmt.Sprintf(`tr[data-job=%q] a`, id)),
				chromedp.WaitVisible(`#graph g.stage[data-kind="gbk"]`),
			); err != nil {
				return err
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll("#graph g.stage")].some(g => Number(g.dataset.elementsOut) > 0 && Number(g.dataset.watermark) > -9e15)`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				return fmt.Errorf("waiting for counts and a watermark: %w", err)
			}
			if look1, err = chromedp.Run(ctx, chromedp.Evaluate[[]stageLook](readGraph)); err != nil {
				return err
			}
			// Look again until a count has grown and a watermark advanced;
			// checkGrowth reports what did not, if neither comes in time.
			if err := testwait.For(ctx, 30*time.Second, func() (bool, error) {
				look2, err = chromedp.Run(ctx, chromedp.Evaluate[[]stageLook](readGraph))
				grew, advanced := growth(look1, look2)
				return grew && advanced, err
			}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			jobShot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
			return err
		}},
		{"stage table and graph show the running stages' rates", func(ctx context.Context) (err error) {
			rates, err = waitRates(ctx)
			return err
		}},
		{"Drain button drains the job", func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx,
				chromedp.Click(`#drain-btn`),
				chromedp.WaitVisible(`#confirm[open] #confirm-yes`),
				chromedp.Click(`#confirm-yes`),
				chromedp.WaitVisible(`#job-state[data-state="DRAINED"]`),
			); err != nil {
				return err
			}
			drainedShot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
			return err
		}},
		{"the list's state filter hides and shows the drained job", func(ctx context.Context) error {
			row := fmt.Sprintf(`tr[data-job=%q]`, id)
			setFilter := func(state string) chromedp.Action[chromedp.Void] {
				return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const f = document.getElementById("state-filter"); f.value = %q; f.dispatchEvent(new Event("change")); return true })()`, state))(ctx, t)
					return err
				})
			}
			return chromedp.Do(ctx,
				chromedp.Navigate(env.WebURL+"/#/"),
				chromedp.WaitVisible(row+`[data-state="DRAINED"]`),
				setFilter("RUNNING"),
				chromedp.WaitNotPresent(row),
				setFilter("DRAINED"),
				chromedp.WaitVisible(row),
			)
		}},
	}
	// The first Run starts the browser, on a context without a timeout.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	for _, st := range steps {
		sctx, scancel := context.WithTimeout(bctx, 90*time.Second)
		err := st.run(sctx)
		scancel()
		if err != nil {
			saveShot(t, shots, "failure.png", bctx)
			t.Fatalf("%s: %v", st.name, err)
		}
		t.Logf("ok: %s", st.name)
	}
	writeShot(t, shots, "jobs.png", listShot)
	writeShot(t, shots, "job.png", jobShot)
	writeShot(t, shots, "job-drained.png", drainedShot)
	checkGrowth(t, look1, look2)
	checkRates(t, rates)

	ev, err := env.Client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
	if err != nil || ev.GetState() != jobpb.JobState_DRAINED {
		t.Errorf("Job API state after the UI drained: %v, %v; want DRAINED", ev.GetState(), err)
	}
}

// checkGrowth requires the graph's element counts and a real watermark to
// have advanced between the two looks.
func checkGrowth(t *testing.T, a, b []stageLook) {
	t.Helper()
	t.Logf("first look %+v", a)
	t.Logf("second look %+v", b)
	grew, advanced := growth(a, b)
	if len(b) < 3 {
		t.Errorf("graph shows %d stages; want the source, the GroupByKey and the sum", len(b))
	}
	if !grew {
		t.Error("no stage's element count grew between the two looks")
	}
	if !advanced {
		t.Error("no stage's watermark advanced between the two looks")
	}
}

// growth reports whether, from look a to look b, some stage's element
// count grew and some stage's watermark advanced (past its minimum, short
// of its end).
func growth(a, b []stageLook) (grew, advanced bool) {
	before := map[string]stageLook{}
	for _, s := range a {
		before[s.ID] = s
	}
	for _, s := range b {
		p, ok := before[s.ID]
		if !ok {
			continue
		}
		grew = grew || s.ElementsOut > p.ElementsOut || s.ElementsIn > p.ElementsIn
		advanced = advanced || (p.Watermark > -9e15 && s.Watermark > p.Watermark && s.Watermark < 9e15)
	}
	return grew, advanced
}

// chromiumPath finds Chromium ($CHROMIUM, /usr/bin/chromium or on PATH),
// failing the test when there is none.
func chromiumPath(t *testing.T) string {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found (set $CHROMIUM or run scripts/setup.sh, which installs Debian's chromium); the web UI test needs it")
	return ""
}

func browser(ctx context.Context, t *testing.T, path string) (context.Context, func()) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1100),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	return bctx, func() { bcancel(); acancel() }
}

// screenshotDir is .work/web at the repository root.
func screenshotDir(t *testing.T) string {
	dir, err := filepath.Abs("../../.work/web")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeShot(t *testing.T, dir, name string, png []byte) {
	if len(png) == 0 {
		t.Errorf("screenshot %s is empty", name)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, name))
}

func saveShot(t *testing.T, dir, name string, ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)); err == nil {
		writeShot(t, dir, name, png)
	}
}
