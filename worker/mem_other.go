//go:build !linux

package worker

// physicalMemory is unknown here: the boot's heap limit is then 1 GiB.
func physicalMemory() uint64 { return 0 }
