package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

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
