package validates

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Status is the outcome of one test.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
	// Incomplete: the test started but never reported an outcome, e.g. the
	// binary hit -test.timeout or crashed while it ran.
	Incomplete Status = "INCOMPLETE"
	// NotRun: an expected test with no events at all (renamed, filtered).
	NotRun Status = "NOT RUN"
)

// Result is one test's outcome and duration, in the order tests started.
type Result struct {
	Name    string
	Status  Status
	Elapsed time.Duration
	// Why is a failed check's error (the harness's own checks; Go and
	// Python tests print theirs in their output).
	Why string
}

// event is the subset of a `go tool test2json` event the harness needs.
type event struct {
	Action  string
	Test    string
	Elapsed float64 // seconds
	Output  string
}

// ParseTest2JSON reads test2json events and returns every test's result in
// start order. Each event's Output is copied to echo (may be nil) so a long
// run can be watched live while it is parsed. Lines that are not JSON (e.g.
// a build error printed before the stream) are echoed, not fatal.
func ParseTest2JSON(r io.Reader, echo io.Writer) ([]Result, error) {
	c := newCollector()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024) // log lines can be huge
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			if echo != nil {
				fmt.Fprintln(echo, sc.Text())
			}
			continue
		}
		if echo != nil && ev.Output != "" {
			io.WriteString(echo, ev.Output)
		}
		c.add(ev)
	}
	return c.results(), sc.Err()
}

// collector accumulates per-test outcomes from a stream of events.
type collector struct {
	order []string
	byKey map[string]*Result
}

func newCollector() *collector { return &collector{byKey: map[string]*Result{}} }

func (c *collector) add(ev event) {
	if ev.Test == "" { // package-level event
		return
	}
	r := c.byKey[ev.Test]
	if r == nil {
		r = &Result{Name: ev.Test, Status: Incomplete}
		c.byKey[ev.Test] = r
		c.order = append(c.order, ev.Test)
	}
	switch ev.Action {
	case "pass":
		r.Status = Pass
	case "fail":
		r.Status = Fail
	case "skip":
		r.Status = Skip
	default:
		return
	}
	r.Elapsed = time.Duration(ev.Elapsed * float64(time.Second))
}

func (c *collector) results() []Result {
	out := make([]Result, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, *c.byKey[n])
	}
	return out
}
