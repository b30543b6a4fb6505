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
}

// DefaultSizes are those of the figures in docs/bench/README.md: 1M
// records of 100 bytes (10-byte keys) and 60 MB of wordcount text.
var DefaultSizes = Sizes{Records: 1_000_000, KeySize: 10, ValueSize: 90, WordcountMB: 60, CPUElements: 400}

// QuickSizes are for smoke runs that finish in a few minutes.
var QuickSizes = Sizes{Records: 100_000, KeySize: 10, ValueSize: 90, WordcountMB: 10, CPUElements: 200}

func (c *Config) logPath(name string) string {
	return filepath.Join(c.WorkDir, "logs", name+".log")
}

// PayloadBytes is how many bytes of records a shuffle workload moves
// through its GroupByKey: the records once, twice for CoGroupByKey's two
// inputs; 0 for the others.
func (s Sizes) PayloadBytes(workload string) int64 {
	per := s.Records * (s.KeySize + s.ValueSize)
	switch workload {
	case "gbk":
		return per
	case "cogbk":
		return 2 * per
	}
	return 0
}
