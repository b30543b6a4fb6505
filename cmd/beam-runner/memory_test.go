package main

import "testing"

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
