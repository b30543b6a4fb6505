package placement

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestBoardScripts runs the scenarios in testdata/board_*.txt: no worker
// runs, the script plays what the executor would report. Commands:
//
//	board            input lines "POOL WORKERS": a new board, every slot starting
//	connect w1 w2    those slots' workers connected
//	acquire [n=N] [avoid=(w1,w2)] [prefer=w1]  N bundles asked for, not on
//	                 the slots avoided if another is up, on the slot preferred
//	                 while it is up: the slot each got, "wait" or the error
//	release w1 w2    those slots' bundles ended (one each)
//	lost w1          the slot's worker died: whether to restart it now
//	down POOL WHY... the pool stopped answering: whether to revive it
//	revived POOL     the pool answers again: the slots to start
//	add POOL         a scale-up: the slot added on the pool, starting
//	drain            a scale-down: the slot picked and the state it had
//	drained w1       whether the draining slot's worker may stop
//	stopped w1       the drained slot's worker stopped
//	active           active slots, and the pool a new worker would go to
//	show             every pool and slot: state/running bundles
func TestBoardScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/board_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			s := &boardScript{}
			datadriven.RunTest(t, f, s.run)
		})
	}
}

type boardScript struct {
	b     *Board
	names []string
}

func (s *boardScript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "board":
		return s.newBoard(t, d.Input)
	case "connect":
		return s.eachSlot(t, d, func(w int) string {
			if !s.b.Connected(w) {
				return fmt.Sprintf("w%d drained meanwhile: stop its worker\n", w)
			}
			return ""
		}) + s.b.String()
	case "release":
		s.eachSlot(t, d, func(w int) string { s.b.Release(w); return "" })
	case "lost":
		return s.eachSlot(t, d, func(w int) string { return fmt.Sprintf("w%d restart now: %v\n", w, s.b.Lost(w)) })
	case "acquire":
		return s.acquire(t, d)
	case "down":
		p := s.pool(t, d.CmdArgs[0].Key)
		var why []string
		for _, a := range d.CmdArgs[1:] {
			why = append(why, a.Key)
		}
		return fmt.Sprintf("revive: %v\n", s.b.MarkDown(p, strings.Join(why, " ")))
	case "revived":
		return fmt.Sprintf("start: %v\n", slotNames(s.b.Revived(s.pool(t, d.CmdArgs[0].Key))))
	case "add":
		return fmt.Sprintf("w%d\n%s", s.b.AddSlot(s.pool(t, d.CmdArgs[0].Key)), s.b)
	case "drain":
		w := s.b.PickDrain()
		if w < 0 {
			return "none to drain\n"
		}
		return fmt.Sprintf("w%d was %s\n%s", w, s.b.Drain(w), s.b)
	case "drained":
		return s.eachSlot(t, d, func(w int) string { return fmt.Sprintf("w%d drained: %v\n", w, s.b.Drained(w)) })
	case "stopped":
		s.eachSlot(t, d, func(w int) string { s.b.Stopped(w); return "" })
	case "active":
		return fmt.Sprintf("active %d, new workers go to pool %d\n", s.b.Active(), s.b.LeastActivePool())
	case "show":
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	return s.b.String()
}

func (s *boardScript) newBoard(t *testing.T, input string) string {
	var workers []int
	s.names = nil
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		name, n, _ := strings.Cut(strings.TrimSpace(line), " ")
		k, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("board line %q: want POOL WORKERS", line)
		}
		s.names, workers = append(s.names, name), append(workers, k)
	}
	s.b = NewBoard(s.names, workers)
	return s.b.String()
}

func (s *boardScript) eachSlot(t *testing.T, d *datadriven.TestData, f func(int) string) string {
	var out strings.Builder
	for _, a := range d.CmdArgs {
		w, err := strconv.Atoi(strings.TrimPrefix(a.Key, "w"))
		if err != nil || w < 0 || w >= s.b.Slots() {
			t.Fatalf("%s: no slot %q", d.Pos, a.Key)
		}
		out.WriteString(f(w))
	}
	return out.String()
}

func (s *boardScript) pool(t *testing.T, name string) int {
	for i, n := range s.names {
		if n == name {
			return i
		}
	}
	t.Fatalf("no pool %q", name)
	return -1
}

func (s *boardScript) acquire(t *testing.T, d *datadriven.TestData) string {
	n := 1
	if d.HasArg("n") {
		d.ScanArgs(t, "n", &n)
	}
	var avoid []int
	if d.HasArg("avoid") {
		var names []string
		d.ScanArgs(t, "avoid", &names)
		for _, a := range names {
			w, err := strconv.Atoi(strings.TrimPrefix(a, "w"))
			if err != nil {
				t.Fatalf("%s: no slot %q", d.Pos, a)
			}
			avoid = append(avoid, w)
		}
	}
	prefer := -1
	if d.HasArg("prefer") {
		var name string
		d.ScanArgs(t, "prefer", &name)
		w, err := strconv.Atoi(strings.TrimPrefix(name, "w"))
		if err != nil {
			t.Fatalf("%s: no slot %q", d.Pos, name)
		}
		prefer = w
	}
	var out strings.Builder
	for i := 0; i < n; i++ {
		w, v := s.b.AcquirePreferring(prefer, avoid)
		switch v {
		case Run:
			fmt.Fprintf(&out, "w%d on %s\n", w, s.names[s.b.Pool(w)])
		case Wait:
			out.WriteString("wait\n")
		case NoneLeft:
			out.WriteString(s.b.NoneLeftError("python").Error() + "\n")
		}
	}
	return out.String()
}

func slotNames(ws []int) []string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("w%d", w))
	}
	return out
}
