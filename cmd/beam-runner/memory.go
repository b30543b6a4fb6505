package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/beam-runner/beam-runner/cmd/beam-runner/internal/gctune"
	"github.com/dustin/go-humanize"
)

// memoryLimit reads --memory_limit: a size such as 512MiB or 2GB, "none"
// for no limit, or empty for a quarter of the machine's memory (none if
// that is unknown).
func memoryLimit(flagValue string) (int64, error) {
	switch strings.ToLower(flagValue) {
	case "none", "0":
		return 0, nil
	case "":
		return machineMemory() / 4, nil
	}
	n, err := humanize.ParseBytes(flagValue)
	if err != nil || n == 0 || n > 1<<62 {
		return 0, fmt.Errorf("--memory_limit %q: want a size such as 512MiB or 2GB, or none", flagValue)
	}
	return int64(n), nil
}

// setHeapLimit gives the Go runtime a soft heap limit above a job's
// --memory_limit, unless GOMEMLIMIT sets one: the runner keeps what it
// buffers within seven eighths of the limit (runner/spec/spill.go), but
// by default the collector lets the heap grow to twice what is live
// before it runs, so a job buffering 1 GiB would show 2 GiB of RSS. The
// headroom (an eighth of the limit, at least 256 MiB) covers what no
// budget counts and the server's own needs; past it the collector works
// harder, at most half the CPU by Go's own cap. (With a quarter as
// headroom, 10M x 500 B under 1 GiB sat at 1.3-1.47 GiB of RSS with 640
// MiB live.)
func setHeapLimit(limit int64) {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(heapCeiling(limit))
}

func heapCeiling(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return max(limit+limit/8, limit+256<<20)
}

// tuneHeap keeps a large heap near what is live (cmd/beam-runner/internal/gctune), under
// the limit setHeapLimit set; GOMEMLIMIT, where set, is left alone.
func tuneHeap(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		gctune.Start(heapCeiling(limit))
	}
}

// machineMemory is the machine's memory in bytes from /proc/meminfo, or 0
// where there is none.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
