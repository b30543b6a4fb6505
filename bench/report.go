package bench

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Cell is one runner's results on one workload, over all rounds.
type Cell struct {
	Runs, Failed int
	Median       time.Duration // of successful runs' wall time
	ServerRSSKB  int64         // worst round
	ClientRSSKB  int64         // worst round
	Signatures   []string      // one per successful run that had one
}

// Row is one workload's line in the report.
type Row struct {
	Workload string
	Cells    map[string]*Cell
	Check    string // output comparison verdict
}

// Report is what the benchmark prints.
type Report struct {
	Runners []string
	Servers map[string]bool // runners that run as a job server process
	Rows    []Row
	Errors  []string // distinct failures, "workload/runner: message"
}

// Summarize folds results into one row per workload.
func Summarize(results []Result, ws []Workload, rs []Runner) Report {
	rep := Report{Servers: map[string]bool{}}
	for _, r := range rs {
		rep.Runners = append(rep.Runners, r.Name)
		rep.Servers[r.Name] = r.Server
	}
	seen := map[string]bool{}
	for _, w := range ws {
		row := Row{Workload: w.Name, Cells: map[string]*Cell{}}
		walls := map[string][]time.Duration{}
		for _, r := range rs {
			row.Cells[r.Name] = &Cell{}
		}
		for _, res := range results {
			c := row.Cells[res.Runner]
			if res.Workload != w.Name || c == nil {
				continue
			}
			addResult(c, res, walls)
			if e := fmt.Sprintf("%s/%s: %s", res.Workload, res.Runner, res.Err); res.Err != "" && !seen[e] {
				seen[e] = true
				rep.Errors = append(rep.Errors, e)
			}
		}
		for name, c := range row.Cells {
			c.Median = Median(walls[name])
		}
		row.Check = CheckOutputs(row.Cells, rep.Runners, noSignature(w, rs))
		rep.Rows = append(rep.Rows, row)
	}
	return rep
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

func addResult(c *Cell, res Result, walls map[string][]time.Duration) {
	c.Runs++
	c.ServerRSSKB = max(c.ServerRSSKB, res.ServerRSSKB)
	c.ClientRSSKB = max(c.ClientRSSKB, res.ClientRSSKB)
	if res.Err != "" {
		c.Failed++
		return
	}
	walls[res.Runner] = append(walls[res.Runner], res.Wall)
	if res.Signature != "" {
		c.Signatures = append(c.Signatures, res.Signature)
	}
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
