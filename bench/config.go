package bench

import (
	"path/filepath"
	"time"
)

// Config is a whole benchmark run.
type Config struct {
	RepoRoot  string
	WorkDir   string
	Sizes     Sizes
	Rounds    int
	Workloads []Workload
	Runners   []Runner
	Timeout   time.Duration // per run, so one hung job cannot stall the rest
	SkipBuild bool
	Python    string // interpreter for Python workloads; "" is python3
	// MemoryLimit is beam-runner-limited's --memory_limit.
	MemoryLimit string
	// Expected holds, by workload, the output signature its input must
	// give, for workloads checked against the input (Workload.Large):
	// Prepare fills it.
	Expected map[string]string
}

// DefaultSizes are those of the figures in docs/bench/README.md: 1M
// records of 100 bytes (10-byte keys), 60 MiB of wordcount text and 600
// MiB for wordcount-600.
var DefaultSizes = Sizes{Records: 1_000_000, KeySize: 10, ValueSize: 90, WordcountMB: 60, LargeWordcountMB: 600, CPUElements: 400}

// QuickSizes are for smoke runs that finish in a few minutes.
var QuickSizes = Sizes{Records: 100_000, KeySize: 10, ValueSize: 90, WordcountMB: 10, LargeWordcountMB: 60, CPUElements: 200}

func (c *Config) logPath(name string) string {
	return filepath.Join(c.WorkDir, "logs", name+".log")
}
