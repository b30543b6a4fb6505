// Package multihost checks SDK workers on several hosts: three network
// namespaces, each joined to the job server's (the test's own) by a veth
// pair and each running a Python worker pool held to half a core by a
// cgroup v1 cpu quota. A CPU-bound Python ParDo runs on one host, then on
// three (the three must take at most 0.4 of the one's time, with equal
// output), and again with records of 100 B, which only dynamic splits
// spread (at most 0.38); then one host's pool and workers are killed
// mid-job, and the job must still end DONE with the clean run's output.
// A GroupByKey measures the job server's data-plane throughput over the
// veths.
//
// It needs root, iproute2 (ip netns), cgroup v1's cpu and cpuacct
// controllers under /sys/fs/cgroup and the Python SDK; it is behind the
// "multihost" build tag and `make test` runs it (`make multihost`):
//
//	go test -tags multihost -v ./validates/multihost
//
// The hosts are 198.18.0.2-4 and the job server 198.18.0.1 (RFC 2544's
// benchmarking range: never routed, and only inside the test's own
// namespaces and links). Namespaces, links and cgroups are removed when
// the test ends, however it ends, and leftovers of a killed run when the
// next one starts. MULTIHOST_LOGDIR keeps the logs; MULTIHOST_ELEMENTS and
// MULTIHOST_ROUNDS size the CPU-bound jobs, MULTIHOST_PAD and
// MULTIHOST_SMALL_PAD their records' bytes.
package multihost
