package autoscale

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// parseRate reads "rate STAGE in=N out=N busy=MS [runner-busy=MS] [sdk]
// [bytes-in=N] [bytes-out=N] [hold=MS] [bp=MS] [outs=(PC:N,...)]", all
// per second.
func parseRate(t *testing.T, d *datadriven.TestData) rateSpec {
	var r rateSpec
	for key, dst := range map[string]*float64{"in": &r.in, "out": &r.out, "busy": &r.busy,
		"runner-busy": &r.runnerBusy, "bytes-in": &r.bytesIn, "bytes-out": &r.bytesOut,
		"hold": &r.hold, "bp": &r.bp} {
		d.MaybeScanArgs(t, key, dst)
	}
	r.sdk = d.HasArg("sdk")
	if a, ok := d.Arg("outs"); ok {
		r.split = map[string]float64{}
		for _, v := range a.Vals {
			pc, n, _ := strings.Cut(v, ":")
			r.split[pc], _ = strconv.ParseFloat(n, 64)
		}
	}
	return r
}

// amount sets "backlog|pending STAGE elements=N|bytes=N [change=R]
// [max-parallel=N] [blocked]": the latest figure, and how it moves per second of
// run.
func (s *sim) amount(t *testing.T, d *datadriven.TestData) string {
	st := s.stage(t, d)
	var a Amount
	var change float64
	d.MaybeScanArgs(t, "elements", &a.Elements)
	d.MaybeScanArgs(t, "bytes", &a.Bytes)
	d.MaybeScanArgs(t, "change", &change)
	if d.Cmd == "backlog" {
		st.in.Backlog, st.backlogChange = a, change
	} else {
		st.in.Pending, st.pendingChange = a, change
		d.MaybeScanArgs(t, "max-parallel", &st.in.MaxParallel)
		st.in.Blocked = d.HasArg("blocked")
	}
	return ""
}

// sample adds one sample as given: "sample STAGE start=MS end=MS in=N
// out=N busy=MS [sdk] [runner-busy=MS] [hold=MS] [bp=MS]" (totals).
func (s *sim) sample(t *testing.T, d *datadriven.TestData) string {
	r := parseRate(t, d)
	var sm Sample
	d.ScanArgs(t, "start", &sm.StartMs)
	d.ScanArgs(t, "end", &sm.EndMs)
	sm.ElementsIn, sm.ElementsOut, sm.BusyMs = int64(r.in), int64(r.out), int64(r.busy)
	sm.RunnerBusyMs, sm.HoldingMs, sm.BackPressuredMs, sm.BusyFromSDK = int64(r.runnerBusy), int64(r.hold), int64(r.bp), r.sdk
	if err := s.stage(t, d).w.Add(sm); err != nil {
		return err.Error()
	}
	return "ok"
}

// runFor moves the script's time: "run for=D [every=1s] [decide=10s]
// [noise=F] [verbose]". Every step each stage reports a sample of its
// rates (times 1±noise, independently for input and busy time), backlogs
// and pending work move by their change; every decide the policy runs and
// its changes are applied and printed. It ends with the count of
// decisions and changes.
func (s *sim) runFor(t *testing.T, d *datadriven.TestData) string {
	total := dur(t, d, "for", 0)
	step, every := dur(t, d, "every", 1000), dur(t, d, "decide", 10_000)
	var noise float64
	d.MaybeScanArgs(t, "noise", &noise)
	var b strings.Builder
	decisions, changes := 0, 0
	for end := s.nowMs + total; s.nowMs < end; {
		if err := s.step(step, noise); err != nil {
			d.Fatalf(t, "%v", err)
		}
		if s.nowMs%every != 0 {
			continue
		}
		dec, err := s.decideNow()
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		decisions++
		if dec.Changed() {
			changes++
		}
		if dec.Changed() || d.HasArg("verbose") {
			fmt.Fprintf(&b, "%s:\n%s", at(s.nowMs), envLines(dec, d.HasArg("verbose")))
		}
	}
	fmt.Fprintf(&b, "%s: %d decisions, %d changes; workers %s\n", at(s.nowMs), decisions, changes, s.workers())
	return b.String()
}

func (s *sim) step(stepMs int64, noise float64) error {
	secs := float64(stepMs) / 1000
	jitter := func() float64 { return 1 + noise*(2*s.rng.Float64()-1) }
	for _, st := range s.stages {
		r, fin, fbusy := st.rate, jitter(), jitter()
		sm := Sample{StartMs: s.nowMs, EndMs: s.nowMs + stepMs,
			ElementsIn: int64(r.in * secs * fin), ElementsOut: int64(r.out * secs * fin),
			BytesIn: int64(r.bytesIn * secs * fin), BytesOut: int64(r.bytesOut * secs * fin),
			BusyMs: int64(r.busy * secs * fbusy), BusyFromSDK: r.sdk, RunnerBusyMs: int64(r.runnerBusy * secs * fbusy),
			HoldingMs: int64(r.hold * secs), BackPressuredMs: int64(r.bp * secs)}
		if len(r.split) > 0 {
			sm.OutByPCollection = map[string]int64{}
			for pc, n := range r.split {
				sm.OutByPCollection[pc] = int64(n * secs * fin)
			}
		}
		if err := st.w.Add(sm); err != nil {
			return fmt.Errorf("stage %s: %v", st.in.ID, err)
		}
		st.in.Backlog.Elements = max(st.in.Backlog.Elements+st.backlogChange*secs, 0)
		st.in.Pending.Elements = max(st.in.Pending.Elements+st.pendingChange*secs, 0)
	}
	s.nowMs += stepMs
	return nil
}

// decideNow runs the policy on the stages' current windows and applies
// its worker counts, as the driver will.
func (s *sim) decideNow() (Decision, error) {
	in := Input{NowMs: s.nowMs, Mode: s.mode, Envs: slices.Clone(s.envs)}
	for _, st := range s.stages {
		si := st.in
		si.Rates = st.w.Rates(s.nowMs, s.slots(st))
		in.Stages = append(in.Stages, si)
	}
	dec, err := s.p.Decide(in)
	for _, e := range dec.Envs {
		s.env(e.ID).Workers = e.Desired
	}
	return dec, err
}

// decide runs one pass now and prints the whole decision, or its error.
func (s *sim) decide() string {
	dec, err := s.decideNow()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s:\n%s", at(s.nowMs), dec.String())
}

func envLines(d Decision, all bool) string {
	if all {
		return d.String()
	}
	var b strings.Builder
	for _, e := range d.Envs {
		if e.Changed() {
			b.WriteString(e.Line(d.Mode) + "\n")
		}
	}
	return b.String()
}

func (s *sim) workers() string {
	var parts []string
	for _, e := range s.envs {
		parts = append(parts, fmt.Sprintf("%s=%d", e.ID, e.Workers))
	}
	return strings.Join(parts, " ")
}

func at(ms int64) string { return "t=" + (time.Duration(ms) * time.Millisecond).String() }

func fmtRates(r Rates) string {
	if r.BusySource == "" {
		r.BusySource = "none"
	}
	return fmt.Sprintf("wall %dms in %s out %s busy %sms (%s)\n"+
		"λp %s/s λo %s/s selectivity %s observed in %s/s out %s/s\n"+
		"per slot: busy %s idle %s back-pressured %s ms/s; stage busy %s ms/s; holding %s ms/s\n",
		r.WallMs, num(r.In), num(r.Out), num(r.BusyMs), r.BusySource,
		num(r.ProcessingRate), num(r.OutputRate), num(r.Selectivity), num(r.ObservedIn), num(r.ObservedOut),
		num(r.BusyMsPerSec), num(r.IdleMsPerSec), num(r.BackPressuredMsPerSec), num(r.StageBusyMsPerSec), num(r.HoldingMsPerSec))
}

func fmtState(st State) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(st.LastChangeMs)) {
		fmt.Fprintf(&b, "last change %s: %s\n", k, at(st.LastChangeMs[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(st.Trials)) {
		fmt.Fprintf(&b, "trial %s: %+v\n", k, st.Trials[k])
	}
	for _, k := range slices.Sorted(maps.Keys(st.Ineffective)) {
		fmt.Fprintf(&b, "ineffective %s: %+v\n", k, st.Ineffective[k])
	}
	for _, k := range slices.Sorted(maps.Keys(st.Needs)) {
		fmt.Fprintf(&b, "needs %s: %d passes in the window, peak raw %.3f\n", k, len(st.Needs[k]), st.PeakNeed(k))
	}
	return b.String()
}
