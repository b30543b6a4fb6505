package engine

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"
)

func init() { commands["pressure"] = (*script).pressure }

// pressure prints flow control's state of each SDK stage with anything
// to say: queued input, a hold it makes or one it is under.
func (s *script) pressure(*datadriven.TestData) (string, error) {
	ps := s.eng.e.Pressure()
	var out []string
	for _, st := range s.p.spec.Stages {
		p, ok := ps[st.ID]
		if !ok || (p.QueuedBytes == 0 && !p.Holding && p.HoldingMs == 0 && len(p.HeldBy) == 0 && p.HeldMs == 0) {
			continue
		}
		line := fmt.Sprintf("%s: queued=%d bound=%d rate=%d", st.ID, p.QueuedBytes, p.BoundBytes, p.RateBytes)
		if p.Holding || p.HoldingMs > 0 {
			line += fmt.Sprintf(" holding=%v holding-ms=%d", p.Holding, p.HoldingMs)
		}
		if len(p.HeldBy) > 0 {
			line += " held-by=(" + strings.Join(p.HeldBy, ",") + ")"
		}
		if p.HeldMs > 0 {
			line += fmt.Sprintf(" held-ms=%d", p.HeldMs)
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return "none", nil
	}
	return strings.Join(out, "\n"), nil
}
