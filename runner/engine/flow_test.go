package engine

import (
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// flow's watermark bookkeeping on its own, no bundles cut: a stage's
// output watermark is its input's, held at its pending input and at its
// bundles in flight, and the job is done once every watermark reached the
// end of time with nothing in flight.
func TestFlowWatermarks(t *testing.T) {
	pc := PCollSpec{Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")}
	e, err := build(Spec{
		PColls: map[string]PCollSpec{"in": pc, "out": pc},
		Stages: []StageSpec{
			{ID: "src", Kind: stagekind.TestStream, Outputs: []string{"in"}},
			{ID: "s", Kind: stagekind.SDK, Inputs: []string{"in"}, Outputs: []string{"out"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := e.flow
	src, s := f.stage("src"), f.stage("s")
	f.deliver("in", globalKV(5, "a", "1"))
	f.setTestStreamWatermark(src, "", 10)
	f.recompute()
	if s.inWM != 10 || s.outWM != 5 || f.pcolls["out"].wm != 5 {
		t.Fatalf("with input at 5 pending: in %d, out %d, PCollection %d; want 10, 5, 5", s.inWM, s.outWM, f.pcolls["out"].wm)
	}
	s.pending = nil
	s.flight[1] = &bundle{minTS: 7}
	f.recompute()
	if s.outWM != 7 {
		t.Fatalf("with a bundle of input at 7 in flight: out %d, want 7", s.outWM)
	}
	f.setTestStreamWatermark(src, "", coders.MaxTimestamp)
	f.recompute()
	if f.done() {
		t.Fatal("done with a bundle in flight")
	}
	delete(s.flight, 1)
	f.recompute()
	if !f.done() || f.pcolls["out"].wm != coders.MaxTimestamp || f.err != nil {
		t.Fatalf("not done at the end of time: out %d, err %v", f.pcolls["out"].wm, f.err)
	}
}

// Data written to a PCollection reaches every reader: an SDK stage's
// pending input and, for a side input, the PCollection's kept data, which
// is dropped once no reader can run again.
func TestFlowDeliverAndSides(t *testing.T) {
	pc := PCollSpec{Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")}
	e, err := build(Spec{
		PColls: map[string]PCollSpec{"in": pc, "side": pc, "out": pc},
		Stages: []StageSpec{
			{ID: "src", Kind: stagekind.TestStream, Outputs: []string{"in", "side"}},
			{ID: "s", Kind: stagekind.SDK, Inputs: []string{"in"}, SideInputs: []string{"side"}, Outputs: []string{"out"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := e.flow
	f.deliver("in", globalKV(1, "a", "1"))
	f.deliver("side", globalKV(2, "b", "2"))
	s := f.stage("s")
	if len(s.pending) != 1 || s.pending[0].minTS != 1 || f.pcolls["side"].data.Bytes == 0 {
		t.Fatalf("pending %v, side data %+v", s.pending, f.pcolls["side"].data)
	}
	if f.sidesReady(s) {
		t.Fatal("side input ready before it is complete")
	}
	f.setTestStreamWatermark(f.stage("src"), "side", coders.MaxTimestamp)
	f.recompute()
	if !f.sidesReady(s) || f.pcolls["side"].data.Bytes == 0 {
		t.Fatal("a complete side input is not ready, or dropped while its reader still runs")
	}
	s.pending = nil
	f.setTestStreamWatermark(f.stage("src"), "", coders.MaxTimestamp)
	f.recompute()
	if f.pcolls["side"].data.Bytes != 0 {
		t.Fatal("side input kept after its reader finished")
	}
}
