package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/cmd/beam-runner/serverflags"
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
