package bench

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Cell is one runner's results on one workload, over all rounds. Each
// figure is the median over the rounds, so that one disturbed round (a
// neighbour on the machine, a page cache cold) moves none of them.
type Cell struct {
	Runs, Failed int
	Median       time.Duration // of successful runs' wall time
	ServerRSSKB  int64         // median of the rounds' peaks (those that read one)
	ClientRSSKB  int64         // median of the rounds' peaks
	Signatures   []string      // one per successful run that had one
}

// Row is one workload's line in the report.
type Row struct {
	Workload     string
	Cells        map[string]*Cell
	Check        string // output comparison verdict
	PayloadBytes int64  // input the workload moves; 0: unknown
}

// Report is what the benchmark prints.
type Report struct {
	Runners []string
	Servers map[string]bool // runners that run as a job server process
	Rows    []Row
	Errors  []string // distinct failures, "workload/runner: message"
}

// Summarize folds results into one row per workload of c.
func Summarize(results []Result, c *Config) Report {
	rep := Report{Servers: map[string]bool{}}
	for _, r := range c.Runners {
		rep.Runners = append(rep.Runners, r.Name)
		rep.Servers[r.Name] = r.Server
	}
	seen := map[string]bool{}
	for _, w := range c.Workloads {
		row := Row{Workload: w.Name, Cells: map[string]*Cell{}, PayloadBytes: w.PayloadBytes(c.Sizes)}
		rounds := map[string]*roundFigures{}
		for _, r := range c.Runners {
			row.Cells[r.Name] = &Cell{}
			rounds[r.Name] = &roundFigures{}
		}
		for _, res := range results {
			cell := row.Cells[res.Runner]
			if res.Workload != w.Name || cell == nil {
				continue
			}
			addResult(cell, res, rounds[res.Runner])
			if e := fmt.Sprintf("%s/%s: %s", res.Workload, res.Runner, res.Err); res.Err != "" && !seen[e] {
				seen[e] = true
				rep.Errors = append(rep.Errors, e)
			}
		}
		for name, cell := range row.Cells {
			rounds[name].fold(cell)
		}
		if want, ok := c.Expected[w.Name]; ok {
			row.Check = CheckAgainstInput(row.Cells, rep.Runners, want)
		} else {
			row.Check = CheckOutputs(row.Cells, rep.Runners, noSignature(w, c.Runners))
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

// roundFigures collects one cell's figures round by round, for medians.
type roundFigures struct {
	walls          []time.Duration
	server, client []int64
}

func (f *roundFigures) fold(c *Cell) {
	c.Median = Median(f.walls)
	c.ServerRSSKB, c.ClientRSSKB = MedianInt64(f.server), MedianInt64(f.client)
}

// noSignature names the runners that cannot report w's output: load tests
// are checked by job metrics, which only job servers serve.
func noSignature(w Workload, rs []Runner) map[string]bool {
	none := map[string]bool{}
	for _, r := range rs {
		none[r.Name] = !w.WritesOutput() && !r.Server
	}
	return none
}

// addResult counts res in c. Peak RSS is taken from every round that read
// one, failed or not: a run that failed for lack of memory still peaked.
func addResult(c *Cell, res Result, f *roundFigures) {
	c.Runs++
	if res.ServerRSSKB > 0 {
		f.server = append(f.server, res.ServerRSSKB)
	}
	if res.ClientRSSKB > 0 {
		f.client = append(f.client, res.ClientRSSKB)
	}
	if res.Err != "" {
		c.Failed++
		return
	}
	f.walls = append(f.walls, res.Wall)
	if res.Signature != "" {
		c.Signatures = append(c.Signatures, res.Signature)
	}
}

// CheckAgainstInput compares every run's output signature with want, the
// signature of the bench's own count of the input: "= input count" when
// at least one run matched and none differed.
func CheckAgainstInput(cells map[string]*Cell, order []string, want string) string {
	var same, diff, missing []string
	for _, name := range order {
		c := cells[name]
		switch {
		case c.Runs == c.Failed:
		case len(c.Signatures) < c.Runs-c.Failed:
			missing = append(missing, name)
		case !allEqualTo(c.Signatures, want):
			diff = append(diff, name)
		default:
			same = append(same, name)
		}
	}
	verdict := "n/a"
	switch {
	case len(diff) > 0:
		verdict = "DIFF from the input's count: " + strings.Join(diff, ",")
	case len(same) > 0:
		verdict = "= input count: " + strings.Join(same, ",")
	}
	if len(missing) > 0 {
		verdict += " (" + strings.Join(missing, ",") + ": no output)"
	}
	return verdict
}

func allEqualTo(ss []string, want string) bool {
	for _, s := range ss {
		if s != want {
			return false
		}
	}
	return true
}

// CheckOutputs compares output signatures across rounds and runners. It
// says "same" only when at least two runners produced comparable output;
// anything else is spelled out so a difference cannot pass unnoticed.
func CheckOutputs(cells map[string]*Cell, order []string, noSig map[string]bool) string {
	bySig := map[string][]string{}
	var notes []string
	for _, name := range order {
		c := cells[name]
		if len(c.Signatures) == 0 {
			if c.Runs > c.Failed && !noSig[name] {
				notes = append(notes, name+": no output")
			}
			continue
		}
		if !allEqual(c.Signatures) {
			notes = append(notes, name+" varies across rounds")
		}
		bySig[c.Signatures[0]] = append(bySig[c.Signatures[0]], name)
	}
	verdict := "n/a"
	switch {
	case len(bySig) > 1:
		verdict = "DIFF " + diffGroups(bySig)
	case len(bySig) == 1 && len(firstGroup(bySig)) > 1:
		verdict = "same: " + strings.Join(firstGroup(bySig), "=")
	}
	if len(notes) > 0 {
		verdict += " (" + strings.Join(notes, "; ") + ")"
	}
	return verdict
}

func allEqual(ss []string) bool {
	for _, s := range ss {
		if s != ss[0] {
			return false
		}
	}
	return true
}

func firstGroup(m map[string][]string) []string {
	for _, g := range m {
		return g
	}
	return nil
}

// diffGroups renders groups of runners that agree, e.g. "beam-runner≠prism=direct".
func diffGroups(m map[string][]string) string {
	var groups []string
	for _, g := range m {
		groups = append(groups, strings.Join(g, "="))
	}
	sort.Strings(groups)
	return strings.Join(groups, "≠")
}
