//go:build xlang

package xlang

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// procStatusKB is a field of /proc/PID/status in kB (VmRSS, VmHWM), 0 if
// the process is gone.
func procStatusKB(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// scrape sums each metric family of the server's /metrics over its labels.
func scrape(t *testing.T, port int) map[string]float64 {
	out := map[string]float64{}
	for series, v := range scrapeSeries(t, port) {
		name, _, _ := strings.Cut(series, "{")
		out[name] += v
	}
	return out
}

// scrapeSeries reads the server's /metrics, by series: NAME{LABELS} as
// the exposition writes them (labels sorted by name).
func scrapeSeries(t *testing.T, port int) map[string]float64 {
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", port))
	if err != nil {
		t.Logf("/metrics: %v", err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] += v
		}
	}
	return out
}

func freeTCPPort(t *testing.T) int {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
