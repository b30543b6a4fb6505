package lifecycle

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux platform Go supports.
const clockTicks = 100

// cpuShare returns the fraction of one core pid used over window.
func cpuShare(pid int, window time.Duration) (float64, error) {
	before, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(window) // a measurement window, not a wait for a condition
	after, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	used := float64(after-before) / clockTicks
	return used / time.Since(start).Seconds(), nil
}

// cpuTicks is utime+stime of pid, from /proc/<pid>/stat.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatTicks(string(b))
}

// parseStatTicks reads fields 14 and 15 (utime, stime). The command name in
// field 2 may hold spaces and parentheses, so fields count from the last ')'.
func parseStatTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat: %q", textclip.Clip(stat, 80))
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %q", textclip.Clip(stat, 80))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times: %q %q", f[11], f[12])
	}
	return utime + stime, nil
}
