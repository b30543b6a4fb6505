package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// rehomePipeline is a streaming job a TestStream feeds: a stateless map,
// a GroupByKey in 10ms fixed windows, a keyed stage that counts each
// group and sets an event-time timer per key 5ms past the window's end
// (its firing is output too), and a sink. With ids suffix and scale it
// is another version of it, as another fused plan makes of it: other
// stage and PCollection ids, and a stateless stage added before the
// keyed one.
func rehomePipeline(t *testing.T, suffix string, scale bool) Spec {
	t.Helper()
	c, key, tc := simCodecs(t)
	id := func(s string) string { return s + suffix }
	kv, kvi := PCollSpec{Codec: c("wv-ikv"), Key: key}, PCollSpec{Codec: c("wv-ikvi"), Key: key}
	stIn := id("grouped")
	sp := Spec{
		Streaming: true, MaxBundles: 1, StartTime: 1000,
		PColls: map[string]PCollSpec{id("src"): kv, id("mid"): kv, id("grouped"): kvi, id("out"): kv},
		Stages: []StageSpec{
			{ID: id("ts"), Kind: stagekind.TestStream, Outputs: []string{id("src")}, Events: rehomeEvents(id("src"))},
			{ID: id("map"), Kind: stagekind.SDK, Inputs: []string{id("src")}, Outputs: []string{id("mid")}},
			{ID: id("gbk"), Kind: stagekind.GBK, Inputs: []string{id("mid")}, Outputs: []string{id("grouped")}, Agg: agg.Config{Window: coders.IntervalWindows}},
		},
	}
	if scale {
		sp.PColls[id("scaled")], stIn = kvi, id("scaled")
		sp.Stages = append(sp.Stages, StageSpec{ID: id("scale"), Kind: stagekind.SDK, Inputs: []string{id("grouped")}, Outputs: []string{stIn}})
	}
	return appendStages(sp,
		StageSpec{ID: id("st"), Kind: stagekind.SDK, Keyed: true, Inputs: []string{stIn}, Outputs: []string{id("out")},
			Timers: []TimerSpec{{Stream: TimerStream{Transform: id("st"), Family: "ev"}, Codec: tc}}},
		StageSpec{ID: id("sink"), Kind: stagekind.SDK, Inputs: []string{id("out")}})
}

func appendStages(sp Spec, st ...StageSpec) Spec {
	sp.Stages = append(sp.Stages, st...)
	return sp
}

// rehomeEvents: keys a-c in six windows, the watermark trailing by a
// window, so that groups, timers and input are held at most points.
func rehomeEvents(pc string) []Event {
	var evs []Event
	for w := int64(0); w < 6; w++ {
		var buf []byte
		for i := int64(0); i < 4; i++ {
			ts := w*10 + i*2
			win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: w * 10, End: w*10 + 10})
			buf = coders.AppendWindowedValue(buf, ts, 1, win, coders.NoFiringPane, kvElem(string(rune('a'+(w+i)%3)), fmt.Sprint("v", ts)))
		}
		evs = append(evs, Event{Kind: AddElements, PColl: pc, Elements: buf},
			Event{Kind: AdvanceWatermark, PColl: pc, Watermark: w*10 - 3})
	}
	return evs
}

// rehomeRun drives an engine of a rehomePipeline as SDK harnesses would,
// committing every bundle it hands out, and records what its sink reads.
type rehomeRun struct {
	t      *testing.T
	e      *Engine
	spec   Spec
	suffix string
	sunk   []string
}

// round hands out and commits one round of bundles; it reports whether
// the job is done.
func (r *rehomeRun) round() bool {
	rd := nextReady(r.e)
	if rd.Err != nil {
		r.t.Fatal(rd.Err)
	}
	for _, b := range rd.Bundles {
		if err := r.e.Commit(b.ID, r.result(b)); err != nil {
			r.t.Fatalf("bundle %d of %s: %v", b.ID, b.Stage, err)
		}
	}
	if len(rd.Bundles) == 0 && !rd.Done && rd.Wake {
		r.e.AdvanceProcessingTime(rd.WakeAt)
	}
	return rd.Done
}

func (r *rehomeRun) result(b Bundle) Result {
	res := Result{Data: map[string][][]byte{}, Timers: map[TimerStream][][]byte{}}
	stage := strings.TrimSuffix(b.Stage, r.suffix)
	in := r.spec.Stages[slices.IndexFunc(r.spec.Stages, func(s StageSpec) bool { return s.ID == b.Stage })].Inputs[0]
	err := r.eachElem(in, b.Input, func(v *coders.WindowedValue, raw []byte) error {
		switch stage {
		case "map":
			res.Data["mid"+r.suffix] = append(res.Data["mid"+r.suffix], raw)
		case "scale":
			res.Data["scaled"+r.suffix] = append(res.Data["scaled"+r.suffix], raw)
		case "sink":
			r.sunk = append(r.sunk, fmt.Sprintf("%d %x %q", v.Timestamp, v.Windows, v.Elem))
		case "st":
			return r.count(v, res)
		}
		return nil
	})
	if err == nil && stage == "st" {
		err = r.fired(b, res)
	}
	if err != nil {
		r.t.Fatalf("bundle %d of %s: %v", b.ID, b.Stage, err)
	}
	return res
}

func (r *rehomeRun) eachElem(pc string, chunks [][]byte, f func(*coders.WindowedValue, []byte) error) error {
	for _, c := range chunks {
		if err := coders.EachRaw(c, r.spec.PColls[pc].Codec, f); err != nil {
			return err
		}
	}
	return nil
}

// count outputs a group's size and sets its key's timer past its window.
func (r *rehomeRun) count(v *coders.WindowedValue, res Result) error {
	kn, err := r.spec.PColls["out"+r.suffix].Key.Len(v.Elem)
	if err != nil {
		return err
	}
	n, _, err := coders.IterableHeader(v.Elem[kn:])
	if err != nil {
		return err
	}
	w, _, err := coders.DecodeIntervalWindow(v.Windows)
	if err != nil {
		return err
	}
	k := v.Elem[:kn:kn]
	out := append(append([]byte(nil), k...), coders.AppendLengthPrefixed(nil, []byte(fmt.Sprint("c", n)))...)
	res.Data["out"+r.suffix] = append(res.Data["out"+r.suffix], coders.AppendWindowedValue(nil, v.Timestamp, v.NumWindows, v.Windows, coders.NoFiringPane, out))
	tm := &coders.Timer{Key: k, NumWindows: 1, Fire: w.End + 5, Hold: w.End + 5, Pane: coders.NoFiringPane}
	stream := TimerStream{Transform: "st" + r.suffix, Family: "ev"}
	res.Timers[stream] = append(res.Timers[stream], coders.AppendTimer(nil, tm))
	return nil
}

// fired outputs each timer the bundle fires, with its key and time.
func (r *rehomeRun) fired(b Bundle, res Result) error {
	stream := TimerStream{Transform: "st" + r.suffix, Family: "ev"}
	tc := r.spec.Stages[slices.IndexFunc(r.spec.Stages, func(s StageSpec) bool { return s.ID == "st"+r.suffix })].Timers[0].Codec
	for data := b.Timers[stream]; len(data) > 0; {
		var tm coders.Timer
		n, err := tc.Parse(data, &tm)
		if err != nil {
			return err
		}
		data = data[n:]
		win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: tm.Fire, End: tm.Fire + 1})
		out := append(append([]byte(nil), tm.Key...), coders.AppendLengthPrefixed(nil, []byte(fmt.Sprint("t", tm.Fire)))...)
		res.Data["out"+r.suffix] = append(res.Data["out"+r.suffix], coders.AppendWindowedValue(nil, tm.Fire, 1, win, coders.NoFiringPane, out))
	}
	return nil
}

func (r *rehomeRun) finish() []string {
	for i := 0; !r.round(); i++ {
		if i > 1000 {
			r.t.Fatalf("not done after %d rounds", i)
		}
	}
	return slices.Sorted(slices.Values(r.sunk))
}

// The rehoming of rehomePipeline's stages into its other version.
func rehomeFull() Rehoming {
	return Rehoming{
		Stages:     map[string]string{"ts2": "ts", "gbk2": "gbk", "st2": "st"},
		Input:      map[string]string{"map2": "map", "sink2": "sink"},
		PColls:     map[string]string{"src2": "src", "mid2": "mid", "grouped2": "grouped", "out2": "out"},
		Transforms: map[string]string{"st": "st2"},
	}
}

// timerOutput is how a timer's firing reads at the sink (rehomeRun.sunk).
var timerOutput = regexp.MustCompile(`t[0-9]+"$`)

// rehomedRun restores the old version's snapshot snap into the new
// version's engine as m says, with what the sink had read before.
func rehomedRun(t *testing.T, old Spec, snap []byte, m Rehoming, before []string) (*rehomeRun, error) {
	now := rehomePipeline(t, "2", true)
	data, err := Rehome(old, snap, now, m)
	if err != nil {
		return nil, err
	}
	e, err := Restore(now, data)
	if err != nil {
		return nil, err
	}
	return &rehomeRun{t: t, e: e, spec: now, suffix: "2", sunk: slices.Clone(before)}, nil
}

// TestRehomeCarriesHeldDataIntoAnotherPlan: a job of rehomePipeline is
// snapshotted where its sink holds pending input, its GroupByKey open
// groups and its keyed stage timers and keyed input; the snapshot is
// rehomed into the other version's engine (other ids, a stage added
// before the keyed one), which runs to the end. Its sink reads what the
// uninterrupted job's does, every count and timer firing once; and a
// rehoming that leaves out any one of those holdings does not.
func TestRehomeCarriesHeldDataIntoAnotherPlan(t *testing.T) {
	old := rehomePipeline(t, "", false)
	e, err := New(old)
	if err != nil {
		t.Fatal(err)
	}
	a := &rehomeRun{t: t, e: e, spec: old}
	var snap []byte
	for i := 0; snap == nil; i++ {
		if a.round() || i > 200 {
			t.Fatalf("the job reached no point holding input, groups and timers at once (round %d)", i)
		}
		s := mustSnapshot(t, a.e)
		held, err := SnapshotHeld(old, s)
		if err != nil {
			t.Fatal(err)
		}
		if held.Stages["sink"].Input && held.Stages["gbk"].Grouped && held.Stages["st"].Keyed {
			t.Logf("snapshot after round %d: %+v", i, held.Stages)
			snap = s
		}
	}
	before := slices.Clone(a.sunk)
	want := a.finish()
	timers := len(slices.DeleteFunc(slices.Clone(want), func(s string) bool { return !timerOutput.MatchString(s) }))
	if timers == 0 || len(want) <= len(before) {
		t.Fatalf("the uninterrupted job's sink read %d (%d before the snapshot), %d timer firings: %q", len(want), len(before), timers, want)
	}
	b, err := rehomedRun(t, old, snap, rehomeFull(), before)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.finish(); !slices.Equal(got, want) {
		t.Errorf("the rehomed job's sink read\n%s\nwant (uninterrupted)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for name, drop := range map[string]func(*Rehoming){
		"the sink's pending input": func(m *Rehoming) { delete(m.Input, "sink2") },
		"the groups":               func(m *Rehoming) { delete(m.Stages, "gbk2") },
		"the keyed stage":          func(m *Rehoming) { delete(m.Stages, "st2") },
	} {
		m := rehomeFull()
		drop(&m)
		b, err := rehomedRun(t, old, snap, m, before)
		if err != nil {
			t.Logf("without %s: %v", name, err)
			continue
		}
		if got := b.finish(); slices.Equal(got, want) {
			t.Errorf("a rehoming without %s gave the uninterrupted job's output: the test cannot see it lost", name)
		}
	}
}
