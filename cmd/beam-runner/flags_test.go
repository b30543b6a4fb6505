package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/cmd/beam-runner/serverflags"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/workers"
)

// TestCombineMergeBytesIsDeprecatedAlias: scripts written for the old
// --combine_merge_bytes keep working, set --combine_tree_bytes, and the
// server warns that the name is deprecated; the new name warns nothing.
func TestCombineMergeBytesIsDeprecatedAlias(t *testing.T) {
	for _, c := range []struct {
		arg    string
		bytes  int
		warned bool
	}{
		{"--combine_merge_bytes=4096", 4096, true},
		{"--combine_merge_bytes=-1", -1, true},
		{"--combine_tree_bytes=2048", 2048, false},
	} {
		fs := flag.NewFlagSet("beam-runner", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		parsed := serverflags.Register(fs)
		if err := fs.Parse([]string{c.arg}); err != nil {
			t.Fatalf("%s: %v", c.arg, err)
		}
		if parsed.CombineTreeBytes != c.bytes {
			t.Errorf("%s: CombineTreeBytes = %d, want %d", c.arg, parsed.CombineTreeBytes, c.bytes)
		}
		var buf bytes.Buffer
		logger, err := newLogger("info", "text", &buf)
		if err != nil {
			t.Fatal(err)
		}
		saved := fl
		fl = parsed
		warnIgnoredFlags(logger)
		opts := executorOptions(workers.Options{}, nil, 0)
		fl = saved
		if opts.CombineTreeBytes != c.bytes {
			t.Errorf("%s: the executor gets CombineTreeBytes %d, want %d", c.arg, opts.CombineTreeBytes, c.bytes)
		}
		warned := strings.Contains(buf.String(), "--combine_merge_bytes is deprecated: use --combine_tree_bytes")
		if warned != c.warned || strings.Contains(buf.String(), "level=WARN") != c.warned {
			t.Errorf("%s: warnings %q, want a deprecation warning: %v", c.arg, buf.String(), c.warned)
		}
	}
	fs := flag.NewFlagSet("beam-runner", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serverflags.Register(fs)
	if err := fs.Parse([]string{"--combine_merge_bytes=lots"}); err == nil {
		t.Error("--combine_merge_bytes=lots accepted")
	}
}

// The autoscaling flags reach the executor's workers; a mode the runner
// does not know is refused naming the flag.
func TestAutoscalingFlags(t *testing.T) {
	fs := flag.NewFlagSet("beam-runner", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	parsed := serverflags.Register(fs)
	if err := fs.Parse([]string{"--autoscaling=ds2", "--min_workers=2", "--max_workers=6", "--autoscaling_interval=3s", "--scale_down_interval=1m", "--scale_down_window=20s", "--batch_target_time=45s"}); err != nil {
		t.Fatal(err)
	}
	saved := fl
	fl = parsed
	opts := executorOptions(workers.Options{}, nil, 0)
	fl = saved
	want := jobs.Scaling{Mode: jobs.ScalingDS2, MinWorkers: 2, MaxWorkers: 6, Interval: 3 * time.Second, ScaleDownInterval: time.Minute,
		ScaleDownWindow: 20 * time.Second, BatchTarget: 45 * time.Second}
	if got := opts.Workers.Scaling; got != want || got.Check() != nil {
		t.Errorf("the executor's workers get scaling %+v (%v), want %+v", got, got.Check(), want)
	}
	fs = flag.NewFlagSet("beam-runner", flag.ContinueOnError)
	parsed = serverflags.Register(fs)
	if err := fs.Parse([]string{"--autoscaling=flink"}); err != nil {
		t.Fatal(err)
	}
	if err := parsed.Scaling.Check(); err == nil || !strings.HasPrefix(err.Error(), "autoscaling: want none or ds2") {
		t.Errorf("--autoscaling=flink: %v, want an error naming the flag", err)
	}
	if d := serverflags.Register(flag.NewFlagSet("d", flag.ContinueOnError)).Scaling; d != jobs.DefaultScaling() || d.On() {
		t.Errorf("default scaling %+v, want off with DS2's intervals", d)
	}
}
