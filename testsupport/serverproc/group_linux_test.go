package serverproc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// The context's end must kill the child's whole tree, not only the child:
// a shell's background sleep stands for the servers and workers a test
// program starts.
func TestGroupCommandKillsTheTreeWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := GroupCommand(ctx, "sh", "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell printed %q, want the sleep's pid", line)
	}
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child exited cleanly; want it killed")
	}
	testwait.Until(t, 10*time.Second, fmt.Sprintf("grandchild %d to end with the context", grandchild), func() bool {
		return syscall.Kill(grandchild, 0) != nil || isZombie(grandchild)
	})
}

// isZombie reports whether pid has exited but is not yet reaped: it no
// longer runs, whatever its parent does about it.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
