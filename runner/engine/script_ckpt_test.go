package engine

import (
	"strings"

	"github.com/cockroachdb/datadriven"
)

// Commands of checkpoint_flight.txt: the checkpoints a checkpoint due asks
// of long-running source bundles, and which stages a restored batch job
// does not run again.
func init() {
	commands["checkpoint-flight"] = (*script).checkpointFlight
	commands["finished"] = (*script).finished
}

// checkpointFlight runs CheckpointFlight with the min-age argument and
// returns the requests it queued for the next Ready.
func (s *script) checkpointFlight(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	age := a.int("min-age", 0)
	if err := a.finish(); err != nil {
		return "", err
	}
	s.eng.e.CheckpointFlight(age)
	out := s.eng.e.splits
	s.eng.e.splits, s.eng.last.Splits = nil, nil
	return formatSplitRequests(out), nil
}

func (s *script) finished(*datadriven.TestData) (string, error) {
	f := s.eng.e.Finished()
	if len(f) == 0 {
		return "none", nil
	}
	return strings.Join(f, " "), nil
}
