package elastic

// Analyze computes each step's figures and the run's totals.
func Analyze(r *Run) ([]StepResult, Totals) {
	busy := BusyHosts(r.Samples)
	var out []StepResult
	for i, st := range r.Steps {
		t1 := lastAt(r.Samples)
		if i+1 < len(r.Steps) {
			t1 = r.Steps[i+1].At
		}
		out = append(out, analyzeStep(r, busy, st, t1))
	}
	t := totals(r)
	for _, s := range out {
		t.FlipFlops += s.FlipFlops
	}
	return out, t
}

// analyzeStep is one step's figures, over [st.At, t1).
func analyzeStep(r *Run, busy []int, st Step, t1 float64) StepResult {
	res := StepResult{From: st.At, To: t1, Rate: st.Rate, ToDecision: -1}
	var mine, ups []Event
	for _, e := range r.Events {
		if e.At < st.At || e.At >= t1 {
			continue
		}
		if e.Env != r.Config.PoolEnv {
			res.OtherEvents++
			continue
		}
		mine = append(mine, e)
		if e.To > e.From {
			ups = append(ups, e)
		}
	}
	res.Decisions, res.FlipFlops = len(mine), FlipFlops(mine)
	converged := st.At
	if len(mine) > 0 {
		res.ToDecision = mine[0].At - st.At
		converged = mine[len(mine)-1].At + settle
	}
	res.Stable = converged <= t1
	res.ToWorkers = TimeToWorkers(r.Samples, busy, ups, st.At, t1)
	res.Workers = WorkersAt(r.Events, r.Config.PoolEnv, r.Config.Initial, t1)
	var lat, all []int64
	for _, o := range r.Outputs {
		if o.At >= st.At && o.At < t1 {
			all = append(all, o.Ms)
		}
		if o.At >= converged && o.At < t1 {
			lat = append(lat, o.Ms)
		}
	}
	res.P50, res.P99, res.Counts = Percentile(lat, 50), Percentile(lat, 99), len(lat)
	res.StepP99 = Percentile(all, 99)
	for i, s := range r.Samples {
		if s.At >= t1 {
			break
		}
		if s.At >= converged {
			res.MaxLag = max(res.MaxLag, Lag(s))
		}
		res.EndLag, res.BusyHosts = Lag(s), busy[i]
	}
	return res
}

// Totals are the run's worker-seconds against fixed provisioning.
type Totals struct {
	Seconds       float64 // the run's sampled span
	WorkerSeconds float64 // the pool environment's workers over time
	MaxSeconds    float64 // the same at --max_workers throughout
	BusySeconds   float64 // hosts taking bundles, summed over the samples
	FlipFlops     int     // reversals within steps (at constant rate)
}

func totals(r *Run) Totals {
	var t Totals
	if len(r.Samples) < 2 {
		return t
	}
	busy := BusyHosts(r.Samples)
	for i := 1; i < len(r.Samples); i++ {
		a, b := r.Samples[i-1].At, r.Samples[i].At
		t.WorkerSeconds += float64(WorkersAt(r.Events, r.Config.PoolEnv, r.Config.Initial, a)) * (b - a)
		t.BusySeconds += float64(busy[i]) * (b - a)
	}
	t.Seconds = lastAt(r.Samples) - r.Samples[0].At
	t.MaxSeconds = float64(r.Config.MaxWorkers) * t.Seconds
	return t
}

func lastAt(ss []Sample) float64 {
	if len(ss) == 0 {
		return 0
	}
	return ss[len(ss)-1].At
}
