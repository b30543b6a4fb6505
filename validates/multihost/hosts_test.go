//go:build multihost

package multihost

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

const (
	coordAddr = "198.18.0.1" // the job server's address on every link
	poolPort  = 50000
	namePfx   = "brmh" // namespaces, links and cgroups of this test
	cgCPU     = "/sys/fs/cgroup/cpu"
	cgAcct    = "/sys/fs/cgroup/cpuacct"
)

// host is one network namespace with a worker pool held to half a core.
type host struct {
	name, addr string
	pool       *exec.Cmd
	logPath    string
}

func (h *host) poolAddr() string { return net.JoinHostPort(h.addr, strconv.Itoa(poolPort)) }

// requireHostSupport fails, saying what is missing, where the test
// cannot build its hosts.
func requireHostSupport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the multi-host test needs root (network namespaces, cgroups); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the multi-host test needs iproute2's ip")
	}
	for _, f := range []string{cgCPU + "/cpu.cfs_quota_us", cgAcct + "/cpuacct.usage"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the multi-host test needs cgroup v1's cpu and cpuacct controllers: %v", err)
		}
	}
}

// newHosts makes n hosts, each with its worker pool serving. Everything
// is torn down when the test ends, and leftovers of an earlier run first.
func newHosts(t *testing.T, py string, n int) []*host {
	requireHostSupport(t)
	var hosts []*host
	for k := 1; k <= n; k++ {
		h := &host{name: fmt.Sprintf("%s%d", namePfx, k), addr: fmt.Sprintf("198.18.0.%d", k+1)}
		teardown(h.name) // a killed run's leftovers
		t.Cleanup(func() { teardown(h.name) })
		if err := h.setup(); err != nil {
			t.Fatalf("host %s: %v", h.name, err)
		}
		hosts = append(hosts, h)
	}
	for _, h := range hosts {
		h.startPool(t, py)
	}
	for _, h := range hosts {
		h.awaitPool(t)
	}
	return hosts
}

// setup makes the namespace, the veth pair (the job server's end in the
// test's namespace) and the half-core cgroups.
func (h *host) setup() error {
	link := h.name + "c"
	steps := [][]string{
		{"netns", "add", h.name},
		{"link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", h.name},
		{"addr", "add", coordAddr, "peer", h.addr + "/32", "dev", link},
		{"link", "set", link, "up"},
		{"-n", h.name, "link", "set", "lo", "up"},
		{"-n", h.name, "addr", "add", h.addr, "peer", coordAddr + "/32", "dev", "eth0"},
		{"-n", h.name, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	for _, root := range []string{cgCPU, cgAcct} {
		if err := os.Mkdir(filepath.Join(root, h.name), 0o755); err != nil {
			return err
		}
	}
	return h.setQuota(50000)
}

// setQuota holds the host to quota µs of CPU per 100 ms (-1: no limit).
// Its shares are raised too, so that the machine's other work cannot
// take its half core: a host of its own would not share it.
func (h *host) setQuota(quota int) error {
	dir := filepath.Join(cgCPU, h.name)
	for file, v := range map[string]int{"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": quota, "cpu.shares": 8192} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startPool runs Python's worker pool in the host's namespace and
// cgroups; the workers it starts inherit both.
func (h *host) startPool(t *testing.T, py string) {
	h.logPath = filepath.Join(logDir(t), h.name+"-pool.log")
	logf, err := os.OpenFile(h.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && exec ip netns exec "$3" "$4" -m apache_beam.runners.worker.worker_pool_main --service_port="$5"`
	h.pool = exec.Command("sh", "-c", script, "sh", filepath.Join(cgCPU, h.name), filepath.Join(cgAcct, h.name), h.name, py, strconv.Itoa(poolPort))
	h.pool.Stdout, h.pool.Stderr = logf, logf
	if err := h.pool.Start(); err != nil {
		t.Fatal(err)
	}
	go h.pool.Wait() // reaped when killed
}

func (h *host) awaitPool(t *testing.T) {
	err := testwait.For(context.Background(), 2*time.Minute, func() (bool, error) {
		c, err := net.DialTimeout("tcp", h.poolAddr(), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		log, _ := os.ReadFile(h.logPath)
		t.Fatalf("the worker pool of %s did not serve %s:\n%s\n%v", h.name, h.poolAddr(), log, err)
	}
}

// kill SIGKILLs every process of the host: its pool and its workers.
func (h *host) kill() int {
	return killCgroup(filepath.Join(cgCPU, h.name))
}

// cpuSeconds is the CPU the host's processes have used.
func (h *host) cpuSeconds() float64 {
	b, _ := os.ReadFile(filepath.Join(cgAcct, h.name, "cpuacct.usage"))
	ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	return ns / 1e9
}

// killCgroup kills the cgroup's processes until none is left (or five
// seconds pass: a teardown must end).
func killCgroup(dir string) int {
	killed := map[int]bool{} // a killed process stays listed until reaped
	testwait.For(context.Background(), 5*time.Second, func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if err != nil || len(pids) == 0 {
			return true, nil
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		return false, nil
	})
	return len(killed)
}

// teardown removes a host however far its setup got: its processes, its
// cgroups, its namespace (which takes the veth pair with it).
func teardown(name string) {
	for _, root := range []string{cgCPU, cgAcct} {
		dir := filepath.Join(root, name)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		killCgroup(dir)
		// A cgroup is removable once its killed processes are reaped.
		testwait.For(context.Background(), 5*time.Second, func() (bool, error) { return os.Remove(dir) == nil, nil })
	}
	exec.Command("ip", "netns", "del", name).Run()
	exec.Command("ip", "link", "del", name+"c").Run() // if the namespace never held it
}

// leftovers lists what of the test's hosts still exists, for the check
// that teardown removed everything.
func leftovers() []string {
	var out []string
	ns, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link").Output()
	for _, l := range bytes.Split(append(ns, links...), []byte("\n")) {
		if bytes.Contains(l, []byte(namePfx)) {
			out = append(out, string(bytes.TrimSpace(l)))
		}
	}
	for _, root := range []string{cgCPU, cgAcct} {
		m, _ := filepath.Glob(filepath.Join(root, namePfx+"*"))
		out = append(out, m...)
	}
	return out
}

func logDir(t *testing.T) string {
	if d := os.Getenv("MULTIHOST_LOGDIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
