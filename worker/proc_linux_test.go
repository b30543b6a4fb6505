package worker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// A worker dies with the server that started it: here the test binary,
// run again as the "server", starts a worker (sleep) and is killed.
func TestWorkersDieWithTheServer(t *testing.T) {
	if os.Getenv("WORKER_TEST_SERVER") == "1" {
		p, err := runCmd(exec.Command("sleep", "600"), "test worker")
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Printf("PID=%d\n", p.cmd.Process.Pid)
		select {}
	}
	srv := exec.Command(os.Args[0], "-test.run=^TestWorkersDieWithTheServer$")
	srv.Env = append(os.Environ(), "WORKER_TEST_SERVER=1")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "PID="); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		srv.Process.Kill()
		t.Fatalf("the server process printed no worker pid (%v)", srv.Wait())
	}
	if !alive(pid) {
		t.Fatalf("worker %d is not running before the server dies", pid)
	}
	srv.Process.Kill()
	srv.Wait()
	if err := testwait.For(context.Background(), 5*time.Second, func() (bool, error) { return !alive(pid), nil }); err != nil {
		exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Fatalf("worker %d still runs 5 s after its server was killed: %v", pid, err)
	}
}

// alive reports whether pid runs: a zombie nobody reaped yet is dead.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
