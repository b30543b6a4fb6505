//go:build multihost

package multihost

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
)

// TestDataPlaneThroughput measures what the job server moves over the
// data plane for a GroupByKey whose workers are in another network
// namespace: every value goes to the server and back. The host has no
// CPU quota here and runs two workers. It checks the output and reports
// MB/s and the server's CPU per GB (docs/scaling.md).
func TestDataPlaneThroughput(t *testing.T) {
	py := python(t)
	hosts := newHosts(t, py, 1)
	if err := hosts[0].SetQuota(-1); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t)
	n, size := testkit.EnvInt("MULTIHOST_GBK_ELEMENTS", 200000), testkit.EnvInt("MULTIHOST_GBK_BYTES", 1000)
	out := filepath.Join(t.TempDir(), "out.txt")
	args := []string{"gbk.py", out, strconv.Itoa(n), strconv.Itoa(size)}
	before := srv.jobIDs()
	res := srv.runOn(t, py, args, []string{hosts[0].PoolAddr() + "/2"}, hosts, out, nil)
	checkGBK(t, res.out, n, size)
	in, outB := srv.dataPlaneBytes(t, before)
	total := float64(in+outB) / 1e6
	secs := res.took.Seconds()
	t.Logf("GroupByKey of %d values of %d B between namespaces: %.0f MB to the workers and %.0f MB back in %.2fs: %.1f MB/s; job server %.1f CPU s (%.1f CPU s per GB), host %.1f CPU s",
		n, size, float64(in)/1e6, float64(outB)/1e6, secs, total/secs, res.serverCPU, res.serverCPU/(total/1000), res.hostCPU)
}

// checkGBK: every key got its share of the values, whole.
func checkGBK(t *testing.T, out []byte, n, size int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	const keys = 1000
	if len(lines) != keys {
		t.Fatalf("%d keys in the output, want %d", len(lines), keys)
	}
	per := n / keys
	for _, l := range lines {
		var k, c, b int
		if _, err := fmt.Sscanf(l, "%d %d %d", &k, &c, &b); err != nil || c != per || b != per*size {
			t.Fatalf("output line %q, want KEY %d %d", l, per, per*size)
		}
	}
}

// dataPlaneBytes sums what the new job's SDK stages were sent and sent
// back over the data plane.
func (s *jobServer) dataPlaneBytes(t *testing.T, before map[string]bool) (toWorkers, fromWorkers int64) {
	t.Helper()
	for _, j := range s.svc.Summaries() {
		if before[j.ID] {
			continue
		}
		d, err := s.svc.Detail(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range d.Stats.Stages {
			toWorkers += st.BytesIn
			fromWorkers += st.BytesOut
		}
	}
	return toWorkers, fromWorkers
}
