package autoscale

import (
	"fmt"
	"math"
	"strings"
)

// graph is the stage graph of one pass in topological order.
type graph struct {
	order []StageInput   // upstream first
	index map[string]int // stage id -> position in order
	envs  map[string]EnvInput
}

func newGraph(in Input) (*graph, error) {
	g := &graph{index: map[string]int{}, envs: map[string]EnvInput{}}
	for _, e := range in.Envs {
		if err := validateEnv(e); err != nil {
			return nil, err
		}
		g.envs[e.ID] = e
	}
	byID := map[string]StageInput{}
	for _, s := range in.Stages {
		if _, dup := byID[s.ID]; dup || s.ID == "" {
			return nil, fmt.Errorf("autoscale: stage id %q is empty or given twice", s.ID)
		}
		if _, ok := g.envs[s.Env]; !ok {
			return nil, fmt.Errorf("autoscale: stage %s runs in environment %q, which is not in the input", s.ID, s.Env)
		}
		byID[s.ID] = s
	}
	return g, g.sort(in.Stages, byID)
}

// sort orders the stages upstream first (Kahn's algorithm, keeping the
// input's order among ready stages so that decisions read the same each
// pass).
func (g *graph) sort(stages []StageInput, byID map[string]StageInput) error {
	waiting := map[string]int{}
	for _, s := range stages {
		for _, e := range s.Inputs {
			if _, ok := byID[e.From]; !ok {
				return fmt.Errorf("autoscale: stage %s reads from stage %q, which is not in the input", s.ID, e.From)
			}
		}
		waiting[s.ID] = len(s.Inputs)
	}
	for len(g.order) < len(stages) {
		progressed := false
		for _, s := range stages {
			if _, done := g.index[s.ID]; done || waiting[s.ID] > 0 {
				continue
			}
			g.index[s.ID] = len(g.order)
			g.order = append(g.order, s)
			progressed = true
			for _, c := range stages {
				for _, e := range c.Inputs {
					if e.From == s.ID {
						waiting[c.ID]--
					}
				}
			}
		}
		if !progressed {
			var left []string
			for _, s := range stages {
				if _, done := g.index[s.ID]; !done {
					left = append(left, s.ID)
				}
			}
			return fmt.Errorf("autoscale: the stage graph has a cycle through stages %s", strings.Join(left, ", "))
		}
	}
	return nil
}

// edgeShare is the part of upstream u's output that edge e carries: its
// PCollection's share of u's output when given and measured, else all.
func edgeShare(u StageInput, e Edge) float64 {
	if e.PCollection == "" || u.Rates.Out <= 0 {
		return 1
	}
	n, ok := u.Rates.OutByPCollection[e.PCollection]
	if !ok {
		return 1
	}
	return n / u.Rates.Out
}

// elements turns an amount into elements with the stage's measured bytes
// per element (of its input, or for a source of its output); bytes with
// no measure count as nothing, and the stage's note says so.
func elements(a Amount, s StageInput, source bool) (float64, bool) {
	if a.Elements > 0 || a.Bytes <= 0 {
		return a.Elements, true
	}
	n, b := s.Rates.In, s.Rates.BytesIn
	if source {
		n, b = s.Rates.Out, s.Rates.BytesOut
	}
	if n <= 0 || b <= 0 {
		return 0, false
	}
	return a.Bytes / (b / n), true
}

// ceil is ⌈x⌉ with a little slack for floating-point error, so that 2.0000001
// workers of need is 2.
func ceil(x float64) int {
	if x <= 0 || math.IsNaN(x) {
		return 0
	}
	if math.IsInf(x, 1) || x > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Ceil(x - 1e-9))
}
