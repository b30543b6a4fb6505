package main

import (
	"runtime/debug"
	"testing"
)

func TestMemoryLimitFlag(t *testing.T) {
	for in, want := range map[string]int64{"64MiB": 64 << 20, "1GiB": 1 << 30, "2GB": 2e9, "4096": 4096, "none": 0, "0": 0} {
		if got, err := memoryLimit(in); err != nil || got != want {
			t.Errorf("memoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"lots", "-1MiB", "1.5.3GB"} {
		if _, err := memoryLimit(bad); err == nil {
			t.Errorf("memoryLimit(%q) accepted", bad)
		}
	}
	if def, err := memoryLimit(""); err != nil || def < 0 || (machineMemory() > 0 && def != machineMemory()/4) {
		t.Errorf("default = %d, %v; machine has %d", def, err, machineMemory())
	}
}

// TestHeapLimit: the Go heap's soft limit sits above a job's limit, by
// an eighth of it or 256 MiB, whichever is more, and GOMEMLIMIT wins.
func TestHeapLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	for limit, want := range map[int64]int64{4 << 30: 4608 << 20, 1 << 30: 1280 << 20, 64 << 20: 320 << 20} {
		setHeapLimit(limit)
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("setHeapLimit(%d): soft limit %d, want %d", limit, got, want)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	before := debug.SetMemoryLimit(-1)
	setHeapLimit(64 << 20)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set, the soft limit moved from %d to %d", before, got)
	}
}
