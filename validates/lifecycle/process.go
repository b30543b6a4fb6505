package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/beam-runner/beam-runner/internal/textclip"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// neverConnects is a PROCESS environment command that ignores the boot
// flags it is given and sleeps, so its harness never connects. It records
// its pid so the check can see whether the runner stopped it.
const neverConnects = "#!/bin/sh\necho $$ > \"$PIDFILE\"\nexec sleep 600\n"

// startupSlack is how long past the server's worker start timeout a job
// may take to fail: planning, starting the process, stopping it.
const startupSlack = 15 * time.Second

// checkProcessNeverConnects: the job fails, naming the environment, within
// the worker start timeout, and the process is stopped.
func checkProcessNeverConnects(ctx context.Context, s *Session) error {
	script := filepath.Join(s.Work, "never-connects.sh")
	pidFile := filepath.Join(s.Work, "never-connects.pid")
	os.Remove(pidFile)
	if err := os.WriteFile(script, []byte(neverConnects), 0o755); err != nil {
		return err
	}
	o, env, err := s.runProcessJob(ctx, "lifecycle-process-never-connects", script, map[string]string{"PIDFILE": pidFile})
	if err != nil {
		return err
	}
	if err := expectFailureNaming(o, strconv.Quote(env)); err != nil {
		return err
	}
	if o.elapsed < s.WorkerStartTimeout-time.Second || o.elapsed > s.WorkerStartTimeout+startupSlack {
		return fmt.Errorf("failed after %v; want about the worker start timeout %v", o.elapsed.Round(time.Millisecond), s.WorkerStartTimeout)
	}
	return awaitGone(pidFile, 10*time.Second)
}

// checkProcessMissingCommand: a command that does not exist fails the job
// at once with an error naming the command.
func checkProcessMissingCommand(ctx context.Context, s *Session) error {
	cmd := filepath.Join(s.Work, "no-such-dir", "no-such-boot")
	o, env, err := s.runProcessJob(ctx, "lifecycle-process-missing-command", cmd, nil)
	if err != nil {
		return err
	}
	if err := expectFailureNaming(o, cmd, strconv.Quote(env)); err != nil {
		return err
	}
	if limit := 10 * time.Second; o.elapsed > limit {
		return fmt.Errorf("failed after %v; a missing command should fail within %v", o.elapsed.Round(time.Millisecond), limit)
	}
	return nil
}

// runProcessJob runs a small pipeline in a PROCESS environment with
// command and returns its outcome and the environment's id.
func (s *Session) runProcessJob(ctx context.Context, name, command string, env map[string]string) (outcome, string, error) {
	cfg, err := protojson.Marshal(&pipepb.ProcessPayload{Command: command, Env: env})
	if err != nil {
		return outcome{}, "", err
	}
	p, err := marshal(ctx, sumOfSquares(10), graphx.URNEnvProcess, string(cfg))
	if err != nil {
		return outcome{}, "", err
	}
	envID, err := onlyEnv(p)
	if err != nil {
		return outcome{}, "", err
	}
	_, o, err := s.runJob(ctx, name, p)
	return o, envID, err
}

func onlyEnv(p *pipepb.Pipeline) (string, error) {
	envs := slices.Sorted(maps.Keys(p.GetComponents().GetEnvironments()))
	if len(envs) != 1 {
		return "", fmt.Errorf("pipeline has environments %v, want one", envs)
	}
	return envs[0], nil
}

// expectFailureNaming requires a FAILED job whose messages hold every want.
func expectFailureNaming(o outcome, want ...string) error {
	if err := expectState(o, jobpb.JobState_FAILED); err != nil {
		return err
	}
	for _, w := range want {
		if !strings.Contains(o.text(), w) {
			return fmt.Errorf("the failure messages do not name %s:\n%s", w, textclip.Clip(o.text(), 2000))
		}
	}
	return nil
}

// awaitGone polls until the process whose pid is in pidFile has exited.
func awaitGone(pidFile string, limit time.Duration) error {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("the environment's process never ran: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	err = testwait.For(context.Background(), limit, func() (bool, error) { return !alive(pid), nil })
	if err != nil {
		return fmt.Errorf("the environment's process %d still runs after the job failed: %w", pid, err)
	}
	return nil
}

// alive reports whether pid is a live process still running sleep (not a
// zombie, not a reused pid).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || !strings.Contains(string(stat), "(sleep)") {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i+2 < len(stat) && stat[i+2] != 'Z'
}
