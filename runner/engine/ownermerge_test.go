package engine

import (
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// The model check of a custom merging WindowFn whose merges are partial,
// as validates/python/ownerwin.py runs it on Python at scale: each record
// has a key and an id, and an owner record's window absorbs the windows
// of its key and id that start before its end, leaving the rest alone.
// Two branches of the records meet again in one GroupByKey (a
// CoGroupByKey's flatten). The test plays the driver and the SDK with
// random choices (arrival order, TestStream watermarks, bundles committed
// out of order, merge bundles split at random elements, retried after a
// lost worker, answers cut into several chunks) and compares the panes
// with a direct evaluation of the WindowFn over each key's windows at once.

var ownerSeed = flag.Int64("owner_seed", 0, "seed of TestOwnerMergeModel (0: from the clock)")

// ownerWin is the test's custom window type.
type ownerWin struct {
	start, end int64
	id         int
	owner      bool
}

// encode writes the window as a custom window: its max timestamp, then
// the SDK's bytes (a bytes coder's).
func (w ownerWin) encode() []byte {
	b := coders.AppendTimestamp(nil, w.end-1)
	return coders.AppendLengthPrefixed(b, fmt.Appendf(nil, "%d %d %d %t", w.start, w.end, w.id, w.owner))
}

func decodeOwnerWin(b []byte) (ownerWin, error) {
	sdk, _, err := coders.LengthPrefixed(b[min(len(b), coders.TimestampSize):])
	var w ownerWin
	if err == nil {
		_, err = fmt.Sscanf(string(sdk), "%d %d %d %t", &w.start, &w.end, &w.id, &w.owner)
	}
	return w, err
}

// ownerMerge is the WindowFn's merge: the merged windows of one key, each
// to the owner window absorbing it (which maps to itself).
func ownerMerge(ws []ownerWin) map[ownerWin]ownerWin {
	owners := map[int]ownerWin{}
	for _, w := range ws {
		if w.owner {
			owners[w.id] = w
		}
	}
	into := map[ownerWin]ownerWin{}
	for _, w := range ws {
		if o, ok := owners[w.id]; ok && !w.owner && w.start < o.end {
			into[w], into[o] = o, o
		}
	}
	return into
}

// ownerRecord is one input record, in arrival order.
type ownerRecord struct {
	key   string
	value int
	win   ownerWin
}

// ownerInput makes n records over keys and ids: one owner per key and id
// with a window 5 to 60 long, the others within 30 of it, arriving about
// in time order, up to 60 out of it.
func ownerInput(rng *rand.Rand, n, keys, ids int) []ownerRecord {
	var owners, recs []ownerRecord
	for k := range keys {
		for id := range ids {
			t := 30 + rng.Int63n(200)
			owners = append(owners, ownerRecord{fmt.Sprintf("k%d", k), len(owners), ownerWin{t, t + 5 + rng.Int63n(56), id, true}})
		}
	}
	recs = append(recs, owners...)
	for len(recs) < n {
		o := owners[rng.Intn(len(owners))]
		t := o.win.start - 30 + rng.Int63n(o.win.end-o.win.start+60)
		recs = append(recs, ownerRecord{o.key, len(recs), ownerWin{t, t + 1, o.win.id, false}})
	}
	arrive := make(map[int]int64, len(recs))
	for _, r := range recs {
		arrive[r.value] = r.win.start + rng.Int63n(60)
	}
	slices.SortStableFunc(recs, func(a, b ownerRecord) int { return int(arrive[a.value] - arrive[b.value]) })
	return recs
}

// onB: the second branch carries every third record.
func onB(v int) bool { return v%3 == 0 }

// ownerExpected evaluates the WindowFn directly: per key, every window
// merged at once; one final on-time pane per window at its end.
func ownerExpected(recs []ownerRecord) []string {
	byKey := map[string]map[ownerWin][]string{}
	for _, r := range recs {
		if byKey[r.key] == nil {
			byKey[r.key] = map[ownerWin][]string{}
		}
		vals := append(byKey[r.key][r.win], fmt.Sprintf("a%d", r.value))
		if onB(r.value) {
			vals = append(vals, fmt.Sprintf("b%d", r.value))
		}
		byKey[r.key][r.win] = vals
	}
	var out []string
	for key, wins := range byKey {
		into := ownerMerge(slices.Collect(maps.Keys(wins)))
		groups := map[ownerWin][]string{}
		for w, vs := range wins {
			if o, ok := into[w]; ok {
				w = o
			}
			groups[w] = append(groups[w], vs...)
		}
		for w, vs := range groups {
			out = append(out, ownerPane(key, w, w.end-1, coders.PaneInfo{IsFirst: true, IsLast: true, Timing: coders.TimingOnTime}, vs))
		}
	}
	slices.Sort(out)
	return out
}

func ownerPane(key string, w ownerWin, ts int64, p coders.PaneInfo, vals []string) string {
	slices.Sort(vals)
	return fmt.Sprintf("%s %v ts=%d %v first=%v last=%v i=%d ot=%d %v", key, w, ts, p.Timing, p.IsFirst, p.IsLast, p.Index, p.OnTimeIndex, vals)
}

// ownerCoders: KV<bytes, bytes> in custom windows, and the merge stage's
// request and answer coders in the global window.
var ownerCoders = map[string]*pipepb.Coder{
	"bytes":   {Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}},
	"kv":      {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "bytes"}},
	"cw":      {Spec: &pipepb.FunctionSpec{Urn: coders.URNCustomWindow}, ComponentCoderIds: []string{"bytes"}},
	"gw":      {Spec: &pipepb.FunctionSpec{Urn: coders.URNGlobalWindow}},
	"wins":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"cw"}},
	"req":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "wins"}},
	"merge":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"cw", "wins"}},
	"merges":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"merge"}},
	"answer":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"wins", "merges"}},
	"ans":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "answer"}},
	"vals":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"bytes"}},
	"kvg":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "vals"}},
	"wv-ckv":  {Spec: &pipepb.FunctionSpec{Urn: coders.URNWindowedValue}, ComponentCoderIds: []string{"kv", "cw"}},
	"wv-req":  {Spec: &pipepb.FunctionSpec{Urn: coders.URNWindowedValue}, ComponentCoderIds: []string{"req", "gw"}},
	"wv-ans":  {Spec: &pipepb.FunctionSpec{Urn: coders.URNWindowedValue}, ComponentCoderIds: []string{"ans", "gw"}},
	"wv-ckvg": {Spec: &pipepb.FunctionSpec{Urn: coders.URNWindowedValue}, ComponentCoderIds: []string{"kvg", "cw"}},
}

func ownerCodec(t *testing.T, id string) *coders.WindowedValueCodec {
	t.Helper()
	c, err := coders.CompileWindowedValue(ownerCoders, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownerSpec: a TestStream writes the two branches, a flatten joins them
// into the GroupByKey whose windows the merge stage mw merges.
func ownerSpec(t *testing.T, streaming bool, events []Event, maxBundles int) Spec {
	key, err := coders.Compile(ownerCoders, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	in := PCollSpec{Codec: ownerCodec(t, "wv-ckv"), Key: key}
	return Spec{
		Streaming: streaming, MaxBundles: maxBundles, MaxAttempts: 4,
		PColls: map[string]PCollSpec{
			"inA": in, "inB": in, "in": in,
			"grouped": {Codec: ownerCodec(t, "wv-ckvg")},
			"mw-in":   {Codec: ownerCodec(t, "wv-req")},
			"mw-out":  {Codec: ownerCodec(t, "wv-ans")},
		},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"inA", "inB"}, Events: events},
			{ID: "flat", Kind: stagekind.Flatten, Inputs: []string{"inA", "inB"}, CopyInputs: []string{"inA", "inB"}, Outputs: []string{"in"}},
			{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"in"}, Outputs: []string{"grouped"}, WindowMergeStage: "mw",
				Agg: agg.Config{Window: coders.CustomWindows, Merging: true, SDKWindowMerge: true}},
			{ID: "sink", Kind: stagekind.SDK, Inputs: []string{"grouped"}},
			{ID: "mw", Kind: stagekind.SDK, Inputs: []string{"mw-in"}, Outputs: []string{"mw-out"}},
		},
	}
}

// ownerEvents is the TestStream: the records in batches, each followed by
// the watermark as far as it may go without closing a window that a later
// record would join, or that a later owner would absorb.
func ownerEvents(recs []ownerRecord, batches int) []Event {
	size := (len(recs) + batches - 1) / batches
	owners := map[string]ownerWin{}
	for _, r := range recs {
		if r.win.owner {
			owners[fmt.Sprint(r.key, r.win.id)] = r.win
		}
	}
	arrived, waiting := map[string]bool{}, map[string]int64{}
	var evs []Event
	for start := 0; start < len(recs); start += size {
		chunk := recs[start:min(len(recs), start+size)]
		var a, b []byte
		for _, r := range chunk {
			elem := kvElem(r.key, fmt.Sprintf("a%d", r.value))
			a = coders.AppendWindowedValue(a, r.win.start, 1, r.win.encode(), coders.NoFiringPane, elem)
			if onB(r.value) {
				elem = kvElem(r.key, fmt.Sprintf("b%d", r.value))
				b = coders.AppendWindowedValue(b, r.win.start, 1, r.win.encode(), coders.NoFiringPane, elem)
			}
			g := fmt.Sprint(r.key, r.win.id)
			if r.win.owner {
				arrived[g] = true
				delete(waiting, g)
			} else if o := owners[g]; !arrived[g] && r.win.start < o.end {
				if t, ok := waiting[g]; !ok || r.win.start < t {
					waiting[g] = r.win.start
				}
			}
		}
		wm := coders.MaxTimestamp
		for _, r := range recs[start+len(chunk):] {
			wm = min(wm, r.win.start)
		}
		for _, t := range waiting {
			wm = min(wm, t)
		}
		evs = append(evs, Event{Kind: AddElements, PColl: "inA", Elements: a}, Event{Kind: AddElements, PColl: "inB", Elements: b},
			Event{Kind: AdvanceWatermark, PColl: "inA", Watermark: wm}, Event{Kind: AdvanceWatermark, PColl: "inB", Watermark: wm})
	}
	return evs
}

// TestOwnerMergeModel runs random inputs through the merge path in batch
// and streaming, with the driver's choices random, against the direct
// evaluation. A failure names its seed: -owner_seed reruns it.
func TestOwnerMergeModel(t *testing.T) {
	base := *ownerSeed
	if base == 0 {
		base = time.Now().UnixNano()
	}
	runs := 40
	if *ownerSeed != 0 {
		runs = 1
	}
	for i := range runs {
		seed := base + int64(i)
		rng := rand.New(rand.NewSource(seed))
		recs := ownerInput(rng, 20+rng.Intn(400), 1+rng.Intn(4), 1+rng.Intn(3))
		want := ownerExpected(recs)
		for _, streaming := range []bool{false, true} {
			spec := ownerSpec(t, streaming, ownerEvents(recs, 1+rng.Intn(8)), 1+rng.Intn(4))
			got, err := runOwnerJob(t, spec, rng)
			if err == nil && strings.Join(got, "\n") != strings.Join(want, "\n") {
				err = fmt.Errorf("panes differ from the direct evaluation:\n%s", paneDiff(got, want))
			}
			if err != nil {
				t.Fatalf("seed %d (rerun: go test ./runner/engine -run TestOwnerMergeModel -owner_seed=%d), streaming=%v, %d records: %v",
					seed, seed, streaming, len(recs), err)
			}
		}
	}
}

// paneDiff lists the panes only one side has.
func paneDiff(got, want []string) string {
	var b strings.Builder
	for _, p := range got {
		if !slices.Contains(want, p) {
			fmt.Fprintf(&b, "  unexpected: %s\n", p)
		}
	}
	for _, p := range want {
		if !slices.Contains(got, p) {
			fmt.Fprintf(&b, "  missing:    %s\n", p)
		}
	}
	return b.String()
}
