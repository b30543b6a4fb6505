package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// mergeCoders: the GBK input KV<bytes, bytes> in interval windows, and the
// merge stage's request and answer coders in the global window.
var mergeCoders = map[string]*pipepb.Coder{
	"bytes":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
	"kv":      {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "bytes"}},
	"iw":      {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:interval_window:v1"}},
	"gw":      {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:global_window:v1"}},
	"wins":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"iw"}},
	"req":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "wins"}},
	"merge":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"iw", "wins"}},
	"merges":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"merge"}},
	"answer":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"wins", "merges"}},
	"ans":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "answer"}},
	"wv-ikv":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kv", "iw"}},
	"wv-req":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"req", "gw"}},
	"wv-ans":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"ans", "gw"}},
	"vals":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"bytes"}},
	"kvg":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "vals"}},
	"wv-ikvg": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kvg", "iw"}},
	"wv-bgw":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"bytes", "gw"}},
}

func mergeCodec(t *testing.T, id string) *coders.WindowedValueCodec {
	t.Helper()
	c, err := coders.CompileWindowedValue(mergeCoders, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mergeSpec: a source stage writes KV elements in interval windows to a
// GroupByKey whose windows the "SDK" (the test) merges; a sink reads the
// panes.
func mergeSpec(t *testing.T, streaming bool) Spec {
	bytesCodec, err := coders.Compile(mergeCoders, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Streaming: streaming, MaxBundles: 2,
		PColls: map[string]PCollSpec{
			"imp":     {Codec: mergeCodec(t, "wv-bgw")},
			"in":      {Codec: mergeCodec(t, "wv-ikv"), Key: bytesCodec},
			"grouped": {Codec: mergeCodec(t, "wv-ikvg")},
			"mw-in":   {Codec: mergeCodec(t, "wv-req")},
			"mw-out":  {Codec: mergeCodec(t, "wv-ans")},
		},
		Stages: []StageSpec{
			{ID: "impulse", Kind: stagekind.Impulse, Outputs: []string{"imp"}},
			{ID: "src", Kind: stagekind.SDK, Inputs: []string{"imp"}, Outputs: []string{"in"}},
			{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"in"}, Outputs: []string{"grouped"}, WindowMergeStage: "mw",
				Agg: agg.Config{Window: coders.IntervalWindows, Merging: true, SDKWindowMerge: true}},
			{ID: "sink", Kind: stagekind.SDK, Inputs: []string{"grouped"}},
			{ID: "mw", Kind: stagekind.SDK, Inputs: []string{"mw-in"}, Outputs: []string{"mw-out"}},
		},
	}
}

// evenMergeAnswer answers one merge request as fn_runner_test's
// CustomMergingWindowFn: windows with an even start merge into their span.
func evenMergeAnswer(t *testing.T, req []byte) []byte {
	t.Helper()
	key, n, err := coders.LengthPrefixed(req)
	if err != nil {
		t.Fatal(err)
	}
	win, _ := coders.Compile(mergeCoders, "iw")
	var even, odd [][]byte
	var span coders.IntervalWindow
	if _, err := coders.EachInIterable(req[n:], win, func(b []byte) error {
		w, _, err := coders.DecodeIntervalWindow(b)
		switch {
		case err != nil:
			return err
		case w.Start%2 != 0:
			odd = append(odd, b)
			return nil
		case len(even) == 0:
			span = w
		}
		span = coders.IntervalWindow{Start: min(span.Start, w.Start), End: max(span.End, w.End)}
		even = append(even, b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out := coders.AppendLengthPrefixed(nil, key)
	out = appendWindows(out, odd)
	if len(even) == 0 {
		return coders.AppendIterableHeader(out, 0)
	}
	out = coders.AppendIterableHeader(out, 1)
	out = coders.AppendIntervalWindow(out, span)
	return appendWindows(out, even)
}

func appendWindows(dst []byte, ws [][]byte) []byte {
	dst = coders.AppendIterableHeader(dst, int32(len(ws)))
	for _, w := range ws {
		dst = append(dst, w...)
	}
	return dst
}

// runMergeJob plays the SDK for every bundle until the job is done and
// returns the panes the sink read, as "key window [values]".
func runMergeJob(t *testing.T, e *Engine, input []byte) (panes []string, merges int) {
	t.Helper()
	in := mergeCodec(t, "wv-ikvg")
	for range 100 {
		r := nextReady(e)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if r.Done {
			return panes, merges
		}
		if len(r.Bundles) == 0 {
			t.Fatal("engine neither done nor ready to run anything")
		}
		for _, b := range r.Bundles {
			res := Result{Data: map[string][][]byte{}}
			switch b.Stage {
			case "src":
				res.Data["in"] = [][]byte{input}
			case "mw":
				merges++
				var out []byte
				if err := coders.Each(b.Input, mergeCodec(t, "wv-req"), func(v *coders.WindowedValue) error {
					out = coders.AppendWindowedValue(out, coders.MinTimestamp, 1, nil, coders.NoFiringPane, evenMergeAnswer(t, v.Elem))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				res.Data["mw-out"] = [][]byte{out}
			case "sink":
				panes = append(panes, formatPanes(t, in, b.Input)...)
			}
			if err := e.Commit(b.ID, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("job did not finish in 100 rounds")
	return nil, 0
}

func formatPanes(t *testing.T, wv *coders.WindowedValueCodec, chunks [][]byte) []string {
	var out []string
	if err := coders.Each(chunks, wv, func(v *coders.WindowedValue) error {
		w, _, err := coders.DecodeIntervalWindow(v.Windows)
		if err != nil {
			return err
		}
		key, n, err := coders.LengthPrefixed(v.Elem)
		if err != nil {
			return err
		}
		var vals []string
		bc, _ := coders.Compile(mergeCoders, "bytes")
		if _, err := coders.EachInIterable(v.Elem[n:], bc, func(b []byte) error {
			p, _, err := coders.LengthPrefixed(b)
			vals = append(vals, string(p))
			return err
		}); err != nil {
			return err
		}
		slices.Sort(vals)
		out = append(out, fmt.Sprintf("%s %d-%d ts=%d [%s]", key, w.Start, w.End, v.Timestamp, strings.Join(vals, " ")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// fnRunnerInput is fn_runner_test's test_custom_merging_window input: k
// with values 1, 2, 100, 101, 102 at those times, in [t, t+1000).
func fnRunnerInput() []byte {
	var buf []byte
	for _, ts := range []int64{1, 2, 100, 101, 102} {
		win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: ts, End: ts + 1000})
		buf = coders.AppendWindowedValue(buf, ts, 1, win, coders.NoFiringPane, kvElem("k", fmt.Sprint(ts)))
	}
	return buf
}

// TestMergeStage drives a GroupByKey whose windows the SDK merges through
// its merge stage, in batch and streaming: the panes are
// fn_runner_test's, and a batch merges in one bundle.
func TestMergeStage(t *testing.T) {
	want := []string{"k 1-1001 ts=1000 [1]", "k 101-1101 ts=1100 [101]", "k 2-1102 ts=1101 [100 102 2]"}
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			e, err := New(mergeSpec(t, streaming))
			if err != nil {
				t.Fatal(err)
			}
			panes, merges := runMergeJob(t, e, fnRunnerInput())
			if strings.Join(panes, "\n") != strings.Join(want, "\n") {
				t.Errorf("panes:\n\t%s\nwant:\n\t%s", strings.Join(panes, "\n\t"), strings.Join(want, "\n\t"))
			}
			if merges != 1 {
				t.Errorf("%d merge bundles, want 1", merges)
			}
		})
	}
}

// TestMergeStageBadSpec: a merge stage must exist and be an SDK stage.
func TestMergeStageBadSpec(t *testing.T) {
	spec := mergeSpec(t, false)
	spec.Stages[2].WindowMergeStage = "sink-missing"
	if _, err := New(spec); err == nil || !strings.Contains(err.Error(), "merge stage") {
		t.Errorf("New with a missing merge stage: %v", err)
	}
}

// TestMergeStageBadAnswer: an answer the GBK cannot parse fails the job
// with the stage named, instead of panicking.
func TestMergeStageBadAnswer(t *testing.T) {
	e, err := New(mergeSpec(t, false))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		r := nextReady(e)
		for _, b := range r.Bundles {
			res := Result{Data: map[string][][]byte{}}
			switch b.Stage {
			case "src":
				res.Data["in"] = [][]byte{fnRunnerInput()}
			case "mw":
				bad := coders.AppendLengthPrefixed(nil, []byte("k"))
				bad = append(bad, 0, 0, 0, 9) // nine windows announced, none there
				res.Data["mw-out"] = [][]byte{coders.AppendWindowedValue(nil, 0, 1, nil, coders.NoFiringPane, bad)}
			}
			if err := e.Commit(b.ID, res); err != nil {
				if !strings.Contains(err.Error(), "stage gbk: merging windows") {
					t.Fatalf("error %v does not name the stage and the merge", err)
				}
				return
			}
		}
	}
	t.Fatal("a malformed merge answer was accepted")
}
