package worker

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// fourth is an SDK the tests add as a fourth language would be: its name
// and image in sdkenv, its runtime here.
const fourth sdkenv.SDK = "fourth"

func init() { sdkenv.Register(sdkenv.Spec{Name: fourth, Tag: "fourth"}) }

// gatedRuntime's prepare says it has begun, then waits to be released.
type gatedRuntime struct {
	begun   chan string // environment ids
	release chan struct{}
}

func (r gatedRuntime) prepare(ctx context.Context, le *localEnv, img sdkenv.Image, files []stagedFile) error {
	r.begun <- le.envID
	select {
	case <-r.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	le.prog, le.about = "true", "the test's runtime for "+img.Version
	return nil
}

func (r gatedRuntime) command(le *localEnv, workerID string, ep Endpoints) (*exec.Cmd, []string) {
	return exec.Command(le.prog), []string{"WORKER_ID=" + workerID}
}

// Two environments prepare side by side: each one's preparation begins
// while the other's is still blocked. A launcher that held its lock
// through a preparation (a pip install, a Maven fetch) would never let the
// second begin before the first was released. An environment's later
// starts reuse its preparation.
func TestEnvironmentsPrepareSideBySide(t *testing.T) {
	rt := gatedRuntime{begun: make(chan string, 4), release: make(chan struct{})}
	l := NewLauncher(Config{Containers: ContainersLocal}, Job{WorkDir: t.TempDir()})
	l.runtimes[fourth] = rt
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := sdkenv.Parse(dockerEnv("apache/beam_fourth_sdk:1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		le  *localEnv
		err error
	}
	results := make(chan result, 3)
	for _, id := range []string{"a", "b", "a"} {
		go func() {
			le, err := l.dockerOrLocal(ctx, id, e)
			results <- result{le, err}
		}()
	}
	begun := map[string]bool{}
	for len(begun) < 2 {
		select {
		case id := <-rt.begun:
			if begun[id] {
				t.Fatalf("environment %q prepared twice", id)
			}
			begun[id] = true
		case <-ctx.Done():
			t.Fatalf("only %v began preparing while the other waited: environments prepare one after the other", begun)
		}
	}
	close(rt.release)
	byEnv := map[string]*localEnv{}
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if prev := byEnv[r.le.envID]; prev != nil && prev != r.le {
			t.Errorf("environment %q prepared twice", r.le.envID)
		}
		byEnv[r.le.envID] = r.le
	}
	if len(byEnv) != 2 || len(rt.begun) != 0 {
		t.Fatalf("prepared %v, %d more began", byEnv, len(rt.begun))
	}
	h, err := byEnv["b"].start("w1", Endpoints{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Exited():
	case <-ctx.Done():
		t.Fatal("the test runtime's worker did not exit")
	}
}
