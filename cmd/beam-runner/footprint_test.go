package main

import (
	"context"
	"flag"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// TestPrismStyleServersLeaveNothingOnDisk starts servers the way Python's
// PrismRunner and Java's TestPrismRunner start Prism (a fresh --job_port,
// no --state_dir), with the user's cache dir and the temp dir of their
// own: after a job and an idle shutdown, after a job and SIGTERM, and
// after a SIGKILL followed by the next server's start, both are as the
// test found them. The next server never removes the store of a server
// that still runs.
func TestPrismStyleServersLeaveNothingOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	cache, tmp, logs := t.TempDir(), t.TempDir(), t.TempDir()
	// The cache dir already holds something of the user's.
	if err := os.MkdirAll(filepath.Join(cache, "pip"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, cache)
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache, "TMPDIR="+tmp)
	start := func(flags ...string) (*exec.Cmd, string) {
		port := testkit.FreePort(t)
		args := append([]string{"--job_port", strconv.Itoa(port), "--log_level", "info", "--log_kind", "dev", "--serve_http=false"}, flags...)
		cmd := exec.Command(bin, args...)
		log := createLog(t, filepath.Join(logs, "server-"+strconv.Itoa(port)+".log"))
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		endpoint := "localhost:" + strconv.Itoa(port)
		// Dialled only once listening: a gRPC channel refused once backs
		// off for a second or more, past an idle timeout.
		testwait.NoErr(t, time.Minute, "the server to listen on "+endpoint, func() error {
			c, err := net.Dial("tcp", endpoint)
			if err == nil {
				c.Close()
			}
			return err
		})
		return cmd, endpoint
	}
	assertLeftAsFound := func(when string) {
		t.Helper()
		if got := listTree(t, cache); !slices.Equal(got, before) {
			t.Errorf("%s: the cache dir holds %v; want %v, as before", when, got, before)
		}
		if got := listTree(t, tmp); len(got) != 0 {
			t.Errorf("%s: the temp dir holds %v; want nothing", when, got)
		}
	}

	srv, endpoint := start("--idle_shutdown_timeout=2s")
	runSumJob(t, endpoint)
	waitExit(t, srv, "idle shutdown")
	assertLeftAsFound("after an idle shutdown")

	srv, endpoint = start()
	runSumJob(t, endpoint)
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, srv, "SIGTERM")
	assertLeftAsFound("after SIGTERM")

	crashed, _ := start()
	live, _ := start()
	crashedDirs := tempStores(t, tmp)
	if err := crashed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	crashed.Wait()
	next, _ := start()
	after := tempStores(t, tmp)
	if len(crashedDirs) != 2 || len(after) != 2 {
		t.Fatalf("temp stores: %v with two servers, %v after one was killed and a third started; want two each", crashedDirs, after)
	}
	liveKept := 0
	for _, d := range crashedDirs {
		if slices.Contains(after, d) {
			liveKept++
		}
	}
	if liveKept != 1 {
		t.Errorf("temp stores before the kill %v, after the next start %v: want the live server's kept and the killed one's gone", crashedDirs, after)
	}
	for _, s := range []*exec.Cmd{live, next} {
		s.Process.Signal(syscall.SIGTERM)
		waitExit(t, s, "SIGTERM")
	}
	assertLeftAsFound("after a SIGKILL, the next server and both stopped")
}

func init() { beam.RegisterFunction(keyBy7) }

func keyBy7(x int) (int, int) { return x % 7, x }

// runSumJob runs a small Go pipeline with a GroupByKey on the server at
// endpoint, with a LOOPBACK worker in this process, to the end.
func runSumJob(t *testing.T, endpoint string) {
	t.Helper()
	beam.Init()
	defer setFlag(jobopts.Endpoint, endpoint)()
	defer setFlag(jobopts.EnvironmentType, *jobopts.EnvironmentType)()
	if err := flag.Set("environment_type", "LOOPBACK"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, s := beam.NewPipelineWithRoot()
	stats.SumPerKey(s, beam.ParDo(s, keyBy7, beam.Create(s, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)))
	if _, err := universal.Execute(ctx, p); err != nil {
		t.Fatalf("job on %s: %v", endpoint, err)
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd, why string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exit after %s: %v", why, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("server still runs a minute after %s\n%s", why, testwait.Goroutines())
	}
}

// listTree is every path under root, relative to it, sorted.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tempStores are the temporary stores' directories in tmp.
func tempStores(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "beam-runner-state-") {
			out = append(out, e.Name())
		}
	}
	return out
}
