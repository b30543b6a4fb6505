// Package nshost builds worker-pool "hosts" on one machine: each a
// network namespace joined to the caller's by a veth pair, running
// Python's worker pool in cgroup v1 cpu and cpuacct groups held to a
// fraction of a core, so that workers on another host are real, bounded
// capacity (validates/multihost, the elastic benchmark). It needs root,
// iproute2 and cgroup v1's cpu and cpuacct controllers.
package nshost

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
	poolPort = 50000
	cgCPU    = "/sys/fs/cgroup/cpu"
	cgAcct   = "/sys/fs/cgroup/cpuacct"
)

// Options names and sizes a set of hosts.
type Options struct {
	// Prefix names the namespaces, links and cgroups (a few letters: a
	// link name is at most 15 bytes).
	Prefix string
	// Net is the first three octets of the hosts' /24 (in RFC 2544's
	// benchmarking range 198.18.0.0/15, never routed): the coordinator is
	// .1, host k is .k+1.
	Net string
	// QuotaUS is each host's CPU per 100 ms, in µs (50000: half a core).
	QuotaUS int
	// LogDir keeps each pool's log.
	LogDir string
}

// CoordAddr is the coordinator's (the caller's) address on every link.
func (o Options) CoordAddr() string { return o.Net + ".1" }

// Host is one network namespace with a worker pool.
type Host struct {
	Name, Addr, LogPath string
	opts                Options
}

// PoolAddr is the host's worker pool's address.
func (h *Host) PoolAddr() string { return net.JoinHostPort(h.Addr, strconv.Itoa(poolPort)) }

// Require fails, saying what is missing, where hosts cannot be built.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the hosts need root (network namespaces, cgroups); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the hosts need iproute2's ip")
	}
	for _, f := range []string{cgCPU + "/cpu.cfs_quota_us", cgAcct + "/cpuacct.usage"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the hosts need cgroup v1's cpu and cpuacct controllers: %v", err)
		}
	}
}

// New makes n hosts, each with its worker pool (py -m worker_pool_main)
// serving. Everything is torn down when the test ends, and leftovers of
// an earlier run first.
func New(t testing.TB, py string, n int, o Options) []*Host {
	t.Helper()
	Require(t)
	var hosts []*Host
	for k := 1; k <= n; k++ {
		h := &Host{Name: fmt.Sprintf("%s%d", o.Prefix, k), Addr: fmt.Sprintf("%s.%d", o.Net, k+1), opts: o}
		teardown(h.Name) // a killed run's leftovers
		t.Cleanup(func() { teardown(h.Name) })
		if err := h.setup(); err != nil {
			t.Fatalf("host %s: %v", h.Name, err)
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

// setup makes the namespace, the veth pair (the coordinator's end in the
// caller's namespace) and the cgroups.
func (h *Host) setup() error {
	link, coord := h.Name+"c", h.opts.CoordAddr()
	steps := [][]string{
		{"netns", "add", h.Name},
		{"link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", h.Name},
		{"addr", "add", coord, "peer", h.Addr + "/32", "dev", link},
		{"link", "set", link, "up"},
		{"-n", h.Name, "link", "set", "lo", "up"},
		{"-n", h.Name, "addr", "add", h.Addr, "peer", coord + "/32", "dev", "eth0"},
		{"-n", h.Name, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	for _, root := range []string{cgCPU, cgAcct} {
		if err := os.Mkdir(filepath.Join(root, h.Name), 0o755); err != nil {
			return err
		}
	}
	return h.SetQuota(h.opts.QuotaUS)
}

// SetQuota holds the host to quota µs of CPU per 100 ms (-1: no limit).
// Its shares are raised too, so that the machine's other work cannot
// take its share of a core: a host of its own would not share it.
func (h *Host) SetQuota(quota int) error {
	dir := filepath.Join(cgCPU, h.Name)
	for file, v := range map[string]int{"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": quota, "cpu.shares": 8192} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startPool runs Python's worker pool in the host's namespace and
// cgroups; the workers it starts inherit both.
func (h *Host) startPool(t testing.TB, py string) {
	h.LogPath = filepath.Join(h.opts.LogDir, h.Name+"-pool.log")
	logf, err := os.OpenFile(h.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && exec ip netns exec "$3" "$4" -m apache_beam.runners.worker.worker_pool_main --service_port="$5"`
	pool := exec.Command("sh", "-c", script, "sh", filepath.Join(cgCPU, h.Name), filepath.Join(cgAcct, h.Name), h.Name, py, strconv.Itoa(poolPort))
	pool.Stdout, pool.Stderr = logf, logf
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	go pool.Wait() // reaped when killed
}

func (h *Host) awaitPool(t testing.TB) {
	err := testwait.For(context.Background(), 2*time.Minute, func() (bool, error) {
		c, err := net.DialTimeout("tcp", h.PoolAddr(), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		log, _ := os.ReadFile(h.LogPath)
		t.Fatalf("the worker pool of %s did not serve %s:\n%s\n%v", h.Name, h.PoolAddr(), log, err)
	}
}

// Kill SIGKILLs every process of the host: its pool and its workers.
func (h *Host) Kill() int {
	return killCgroup(filepath.Join(cgCPU, h.Name))
}

// CPUSeconds is the CPU the host's processes have used.
func (h *Host) CPUSeconds() float64 {
	b, _ := os.ReadFile(filepath.Join(cgAcct, h.Name, "cpuacct.usage"))
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

// Leftovers lists what of the hosts named with prefix still exists, for
// a check that teardown removed everything.
func Leftovers(prefix string) []string {
	var out []string
	ns, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link").Output()
	for _, l := range bytes.Split(append(ns, links...), []byte("\n")) {
		if bytes.Contains(l, []byte(prefix)) {
			out = append(out, string(bytes.TrimSpace(l)))
		}
	}
	for _, root := range []string{cgCPU, cgAcct} {
		m, _ := filepath.Glob(filepath.Join(root, prefix+"*"))
		out = append(out, m...)
	}
	return out
}
