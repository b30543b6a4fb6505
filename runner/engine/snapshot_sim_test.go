package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// simCoders extend testCoders with GroupByKey output (KV of a key and an
// iterable of values) and impulse's windowed bytes.
var simCoders = func() map[string]*pipepb.Coder {
	m := map[string]*pipepb.Coder{
		"iter":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"bytes"}},
		"kvi":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "iter"}},
		"wv-ikvi": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kvi", "iw"}},
		"wv-b":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"bytes", "gw"}},
	}
	for k, v := range testCoders {
		m[k] = v
	}
	return m
}()

var (
	evStream = TimerStream{Transform: "st", Family: "ev"}
	ptStream = TimerStream{Transform: "st", Family: "pt"}
)

// simCodecs compiles simCoders' windowed-value codecs (by id), key
// codec and timer codec, for the pipelines built on them.
func simCodecs(t testing.TB) (func(id string) *coders.WindowedValueCodec, *coders.Codec, *coders.TimerCodec) {
	t.Helper()
	c := func(id string) *coders.WindowedValueCodec {
		w, err := coders.CompileWindowedValue(simCoders, id)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	key, err := coders.Compile(simCoders, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := coders.CompileTimer(simCoders, "timer")
	if err != nil {
		t.Fatal(err)
	}
	return c, key, tc
}

// simPipeline is a streaming (or batch) job that uses every kind of engine
// state: an impulse feeding a side input; a TestStream feeding a
// splittable stage whose output goes to three GroupByKeys (triggered fixed
// windows, sessions, and the default trigger's fast path); a stateful
// stage with event- and processing-time timers after the triggered GBK; a
// flatten; and sinks, one reading the side input.
func simPipeline(t testing.TB, r *rand.Rand) Spec {
	t.Helper()
	c, key, tc := simCodecs(t)
	kv := PCollSpec{Codec: c("wv-ikv"), Key: key}
	kvi := PCollSpec{Codec: c("wv-ikvi"), Key: key}
	triggers := []agg.Config{
		{Window: coders.IntervalWindows},
		{Window: coders.IntervalWindows, AllowedLateness: 20, Trigger: eowTrigger(ptTrigger(5), countTrigger(1))},
		{Window: coders.IntervalWindows, Accumulation: pipepb.AccumulationMode_ACCUMULATING, AllowedLateness: 10,
			Trigger: eowTrigger(countTrigger(2), nil)},
		{Window: coders.IntervalWindows, Trigger: repeatTrigger(anyTrigger(countTrigger(2), ptTrigger(3)))},
	}
	sessions := []agg.Config{
		{Window: coders.IntervalWindows, Merging: true},
		{Window: coders.IntervalWindows, Merging: true, AllowedLateness: 8, Trigger: eowTrigger(countTrigger(1), countTrigger(1))},
	}
	return Spec{
		Streaming: r.Intn(4) > 0, MaxBundles: 1 + r.Intn(3), MinBundleBytes: r.Intn(2) * 40, StartTime: 1000,
		PColls: map[string]PCollSpec{
			"imp": {Codec: c("wv-b")}, "side": {Codec: c("wv-kv")},
			"src": kv, "mid": kv, "midS": kv, "grouped": kvi, "sess": kvi, "fastout": kvi, "out2": kv, "flat": kv,
		},
		Stages: []StageSpec{
			{ID: "imp", Kind: stagekind.Impulse, Outputs: []string{"imp"}},
			{ID: "sideprod", Kind: stagekind.SDK, Inputs: []string{"imp"}, Outputs: []string{"side"}},
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: simEvents(r)},
			{ID: "map", Kind: stagekind.SDK, Splittable: true, Inputs: []string{"src"}, Outputs: []string{"mid", "midS"}},
			{ID: "gbkTrig", Kind: stagekind.GBK, Inputs: []string{"mid"}, Outputs: []string{"grouped"}, Agg: triggers[r.Intn(len(triggers))]},
			{ID: "gbkSess", Kind: stagekind.GBK, Inputs: []string{"midS"}, Outputs: []string{"sess"}, Agg: sessions[r.Intn(len(sessions))]},
			{ID: "gbkFast", Kind: stagekind.GBK, Inputs: []string{"mid"}, Outputs: []string{"fastout"}, Agg: agg.Config{Window: coders.IntervalWindows}},
			{ID: "st", Kind: stagekind.SDK, Keyed: true, Inputs: []string{"grouped"}, Outputs: []string{"out2"},
				AllowedLateness: int64(r.Intn(3) * 5),
				Timers:          []TimerSpec{{Stream: evStream, Codec: tc}, {Stream: ptStream, Codec: tc, Processing: true}}},
			{ID: "sesssink", Kind: stagekind.SDK, Inputs: []string{"sess"}},
			{ID: "fastsink", Kind: stagekind.SDK, Inputs: []string{"fastout"}, SideInputs: []string{"side"}},
			{ID: "flat", Kind: stagekind.Flatten, Inputs: []string{"out2", "mid"}, CopyInputs: []string{"out2", "mid"}, Outputs: []string{"flat"}},
			{ID: "flatsink", Kind: stagekind.SDK, Inputs: []string{"flat"}},
		},
	}
}

func eowTrigger(early, late *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: early, LateFirings: late}}}
}
func countTrigger(n int32) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
}
func ptTrigger(ms int64) *pipepb.Trigger {
	d := &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: ms}}}
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{TimestampTransforms: []*pipepb.TimestampTransform{d}}}}
}
func repeatTrigger(s *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: s}}}
}
func anyTrigger(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: s}}}
}

// simEvents are random TestStream events: elements of keys a-c in 10ms
// fixed windows around the watermark (some late), watermark and
// processing-time advances.
func simEvents(r *rand.Rand) []Event {
	var evs []Event
	wm := int64(0)
	for n := 3 + r.Intn(15); n > 0; n-- {
		switch r.Intn(5) {
		case 0:
			wm += int64(r.Intn(25))
			evs = append(evs, Event{Kind: AdvanceWatermark, PColl: "src", Watermark: wm})
		case 1:
			evs = append(evs, Event{Kind: AdvanceProcessingTime, Advance: int64(r.Intn(10))})
		default:
			var buf []byte
			for m := 1 + r.Intn(4); m > 0; m-- {
				ts := max(0, wm-15+int64(r.Intn(40)))
				win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: ts - ts%10, End: ts - ts%10 + 10})
				k := string(rune('a' + r.Intn(3)))
				buf = coders.AppendWindowedValue(buf, ts, 1, win, coders.NoFiringPane, kvElem(k, fmt.Sprintf("v%d", r.Intn(100))))
			}
			evs = append(evs, Event{Kind: AddElements, PColl: "src", Elements: buf})
		}
	}
	return evs
}

// simOp is one step of a script; p and q are its random parameters.
type simOp struct {
	kind string // ready, commit, split, pt, probe, drain
	p, q int
}

func simScript(r *rand.Rand) []simOp {
	kinds := []string{"ready", "ready", "ready", "commit", "commit", "commit", "split", "pt", "probe", "drain"}
	ops := make([]simOp, 30+r.Intn(120))
	for i := range ops {
		ops[i] = simOp{kind: kinds[r.Intn(len(kinds))], p: r.Intn(1000), q: r.Intn(1000)}
	}
	return ops
}

// sim drives one engine: it plays the SDK harnesses, whose outputs are a
// pure function of the bundle and the op's parameters, and logs what the
// engine does.
type sim struct {
	t      testing.TB
	e      *Engine
	spec   Spec
	flight []Bundle // by id
	// handed records every bundle handed out, when not nil.
	handed *[]Bundle
}

func (s *sim) step(op simOp) []string {
	var out []string
	switch op.kind {
	case "ready":
		rd := nextReady(s.e)
		for _, x := range rd.Expired {
			out = append(out, fmt.Sprintf("expired %s %x %x", x.Stage, x.Key, x.Window))
		}
		for _, b := range rd.Bundles {
			out = append(out, formatBundle(b))
			for _, st := range s.spec.Stages {
				for _, side := range st.SideInputs {
					if st.ID == b.Stage { // what the driver serves as the side input
						out = append(out, fmt.Sprintf("side %s %x", side, s.e.SideData(side).Chunks))
					}
				}
			}
			s.flight = append(s.flight, b)
			if s.handed != nil {
				*s.handed = append(*s.handed, b)
			}
		}
	case "commit":
		if len(s.flight) > 0 {
			out = append(out, s.commit(op.p%len(s.flight), op))
		}
	case "drain":
		for len(s.flight) > 0 {
			out = append(out, s.commit(0, op))
		}
	case "split":
		out = append(out, s.split(op))
	case "pt":
		s.e.AdvanceProcessingTime(processingTime(s.e) + int64(op.p%12))
	case "probe":
		at, ok := s.e.flow.nextWakeup()
		out = append(out, fmt.Sprintf("split=%v wake=%d,%v", s.e.splitCandidates(), at, ok))
	}
	var wms []string
	for _, pc := range slices.Sorted(maps.Keys(s.spec.PColls)) {
		wms = append(wms, fmt.Sprintf("%s=%d", pc, s.e.Watermark(pc)))
	}
	out = append(out, fmt.Sprintf("now=%d done=%v inflight=%d err=%v wm %s", processingTime(s.e), s.e.flow.done(), bundlesInFlight(s.e), s.e.flow.err, strings.Join(wms, " ")))
	return out
}

func formatBundle(b Bundle) string {
	var ts []string
	for st, data := range b.Timers {
		ts = append(ts, fmt.Sprintf("%s/%s:%x", st.Transform, st.Family, data))
	}
	sort.Strings(ts)
	return fmt.Sprintf("bundle %d %s in=%x keys=%x timers=%v", b.ID, b.Stage, b.Input, b.Keys, ts)
}

func (s *sim) commit(i int, op simOp) string {
	b := s.flight[i]
	s.flight = append(s.flight[:i], s.flight[i+1:]...)
	res, err := s.result(b, op)
	if err != nil {
		s.t.Fatalf("bundle %d: %v", b.ID, err)
	}
	return fmt.Sprintf("commit %d: %v", b.ID, s.e.Commit(b.ID, res))
}

// result is what the stage's SDK code would produce for the bundle.
func (s *sim) result(b Bundle, op simOp) (Result, error) {
	res := Result{Data: map[string][][]byte{}}
	switch b.Stage {
	case "sideprod":
		res.Data["side"] = [][]byte{globalKV(0, "s", "1")}
	case "map":
		owned, err := s.e.ownedInput(b.ID)
		if err != nil {
			return res, err
		}
		err = s.eachElem("src", owned, func(v *coders.WindowedValue, raw []byte) error {
			res.Data["mid"] = append(res.Data["mid"], raw)
			win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: v.Timestamp, End: v.Timestamp + 1 + int64(len(raw)%5)})
			res.Data["midS"] = append(res.Data["midS"], coders.AppendWindowedValue(nil, v.Timestamp, 1, win, coders.NoFiringPane, v.Elem))
			if op.q%4 == 0 && len(res.Residuals) == 0 { // a self-checkpoint
				res.Residuals = append(res.Residuals, Residual{Element: raw, Delay: int64(op.q % 13), Hold: v.Timestamp, Held: op.q%2 == 1})
			}
			return nil
		})
		return res, err
	case "st":
		return s.stateful(b, op)
	}
	return res, nil
}

// stateful counts each key's grouped values, reports fired timers and sets
// event- and processing-time timers (sometimes clearing one instead).
func (s *sim) stateful(b Bundle, op simOp) (Result, error) {
	res := Result{Data: map[string][][]byte{}, Timers: map[TimerStream][][]byte{}}
	key := s.spec.PColls["grouped"].Key
	err := s.eachElem("grouped", b.Input, func(v *coders.WindowedValue, _ []byte) error {
		kn, err := key.Len(v.Elem)
		if err != nil {
			return err
		}
		n, _, err := coders.IterableHeader(v.Elem[kn:])
		if err != nil {
			return err
		}
		out := append(append([]byte(nil), v.Elem[:kn]...), coders.AppendLengthPrefixed(nil, []byte(fmt.Sprint("c", n)))...)
		res.Data["out2"] = append(res.Data["out2"], coders.AppendWindowedValue(nil, v.Timestamp, v.NumWindows, v.Windows, coders.NoFiringPane, out))
		return nil
	})
	if err != nil {
		return res, err
	}
	fired := len(b.Timers[evStream]) + len(b.Timers[ptStream])
	for i, k := range b.Keys {
		if fired > 0 {
			res.Data["out2"] = append(res.Data["out2"], coders.AppendWindowedValue(nil, 0, 1, coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: 0, End: 10}), coders.NoFiringPane,
				append([]byte(k), coders.AppendLengthPrefixed(nil, []byte(fmt.Sprint("t", fired)))...)))
		}
		if fired > 0 && ((op.q+i)%3 == 0 || op.p >= 900) {
			continue // the timer loop of this key ends
		}
		fire := s.e.Watermark("grouped") + int64((op.p+i)%30)
		fire = min(max(fire, 0), coders.EndOfGlobalWindow) // as SDKs clamp
		ev := &coders.Timer{Key: []byte(k), NumWindows: 1, Fire: fire, Hold: fire, Pane: coders.NoFiringPane, Clear: (op.p+i)%7 == 0}
		pt := &coders.Timer{Key: []byte(k), Tag: []byte("p"), NumWindows: 1, Fire: processingTime(s.e) + int64((op.q+i)%15), Hold: fire, Pane: coders.NoFiringPane}
		res.Timers[evStream] = append(res.Timers[evStream], coders.AppendTimer(nil, ev))
		if (op.q+i)%2 == 0 {
			res.Timers[ptStream] = append(res.Timers[ptStream], coders.AppendTimer(nil, pt))
		}
	}
	return res, nil
}

func (s *sim) eachElem(pc string, chunks [][]byte, f func(*coders.WindowedValue, []byte) error) error {
	for _, c := range chunks {
		if err := coders.EachRaw(c, s.spec.PColls[pc].Codec, f); err != nil {
			return err
		}
	}
	return nil
}

// split splits a running bundle of the splittable stage: a channel split
// at a random element, sometimes keeping part of the element before it,
// or only a residual of a split element.
func (s *sim) split(op simOp) string {
	var maps []Bundle
	for _, b := range s.flight {
		if b.Stage == "map" {
			maps = append(maps, b)
		}
	}
	if len(maps) == 0 {
		return "split: none"
	}
	b := maps[op.p%len(maps)]
	owned, err := s.e.ownedInput(b.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	var elems [][]byte
	if err := s.eachElem("src", owned, func(_ *coders.WindowedValue, raw []byte) error {
		elems = append(elems, raw)
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
	sr := SplitResult{FirstResidual: -1}
	if len(elems) > 0 {
		at := op.q % (len(elems) + 1)
		sr.FirstResidual = at
		if at > 0 && op.q%2 == 0 {
			sr.Primary = [][]byte{elems[at-1]}
			sr.Residuals = []Residual{{Element: elems[at-1], Delay: int64(op.p % 9)}}
		}
	}
	n, err := s.e.ApplySplit(b.ID, sr)
	return fmt.Sprintf("split %d at %d: %d %v", b.ID, sr.FirstResidual, n, err)
}
