package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Phases are one job's timeline: seconds (client phases) or milliseconds
// (the server's, named *_ms) by phase name.
type Phases map[string]float64

// TinyRun is what bench/py/tiny.py printed for one runner: the client's
// timeline of each job and, for beam-runner at debug level, the server's.
type TinyRun struct {
	Client []Phases
	Server []Phases
}

// ParseTiny reads tiny.py's JSON lines. The first job of the process is
// left out of Client: it includes starting the job server, which a
// process pays once.
func ParseTiny(r io.Reader) (TinyRun, error) {
	var run TinyRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			return run, fmt.Errorf("tiny.py output %q: %w", line, err)
		}
		if server, ok := row["server"].(map[string]any); ok {
			run.Server = append(run.Server, numbers(server))
			continue
		}
		if state, _ := row["state"].(string); state != "DONE" {
			return run, fmt.Errorf("tiny.py job %v ended %q, not DONE", row["job"], state)
		}
		if job, _ := row["job"].(float64); job > 0 {
			run.Client = append(run.Client, numbers(row))
		}
	}
	return run, sc.Err()
}

func numbers(m map[string]any) Phases {
	out := Phases{}
	for k, v := range m {
		if f, ok := v.(float64); ok && k != "job" && k != "server_job" {
			out[k] = f
		}
	}
	return out
}

// timelineField is one "phase_ms=1.5" of the server's "job timeline" log
// line (text or dev format).
var timelineField = regexp.MustCompile(`(\w+_ms)=([0-9.]+)`)

// ParseServerTimelines reads the "job timeline" lines of a beam-runner log
// written at --log_level=debug.
func ParseServerTimelines(r io.Reader) []Phases {
	var out []Phases
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "job timeline") {
			continue
		}
		p := Phases{}
		for _, m := range timelineField.FindAllStringSubmatch(line, -1) {
			if f, err := strconv.ParseFloat(m[2], 64); err == nil {
				p[m[1]] = f
			}
		}
		out = append(out, p)
	}
	return out
}

// MedianPhases is each phase's median over the jobs that have it, and the
// phase names, sorted.
func MedianPhases(jobs []Phases) (Phases, []string) {
	values := map[string][]float64{}
	for _, j := range jobs {
		for k, v := range j {
			values[k] = append(values[k], v)
		}
	}
	out := Phases{}
	for k, vs := range values {
		sort.Float64s(vs)
		m := len(vs) / 2
		if len(vs)%2 == 1 {
			out[k] = vs[m]
		} else {
			out[k] = (vs[m-1] + vs[m]) / 2
		}
	}
	names := make([]string, 0, len(out))
	for k := range out {
		names = append(names, k)
	}
	slices.Sort(names)
	return out, names
}

// WritePhaseTable writes a markdown table of each runner's median per
// phase, in order (phases a runner lacks show "-"), in milliseconds.
func WritePhaseTable(w io.Writer, order []string, runners []string, medians map[string]Phases) {
	fmt.Fprintf(w, "| phase | %s |\n|---|%s\n", strings.Join(runners, " | "), strings.Repeat("---|", len(runners)))
	for _, ph := range order {
		fmt.Fprintf(w, "| %s |", ph)
		for _, r := range runners {
			v, ok := medians[r][ph]
			switch {
			case !ok:
				fmt.Fprint(w, " - |")
			case strings.HasSuffix(ph, "_ms"):
				fmt.Fprintf(w, " %.1f |", v)
			case ph == "bundles":
				fmt.Fprintf(w, " %.0f |", v)
			default:
				fmt.Fprintf(w, " %.1f |", v*1000)
			}
		}
		fmt.Fprintln(w)
	}
}
