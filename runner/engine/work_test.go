package engine

import (
	"testing"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Work reports a running bundle's input, elements counted to the limit
// and bytes in full, and a stage's queued input with the bundles it could
// run as: one per element, at most the limit.
func TestWorkRemaining(t *testing.T) {
	in := globalKV(1, "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
	mid := globalKV(1, "w", "1", "x", "2", "y", "3", "z", "4")
	e, bs := startOne(t, Spec{Streaming: true, MaxBundles: 1,
		PColls: map[string]PCollSpec{"src": {Codec: wvCodec(t, "wv-kv")}, "mid": {Codec: wvCodec(t, "wv-kv")}},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: in}}},
			{ID: "a", Kind: stagekind.SDK, Inputs: []string{"src"}, Outputs: []string{"mid"}},
			{ID: "b", Kind: stagekind.SDK, Inputs: []string{"mid"}},
		}})
	w := e.Work(3)
	if got, want := w["a"].Flight[bs[0].ID], (FlightWork{Elements: 3, Bytes: int64(len(in))}); got != want {
		t.Errorf("a's bundle in flight: %+v, want %+v", got, want)
	}
	if w["b"].Pieces != 0 || w["b"].QueuedBytes != 0 || len(w["b"].Flight) != 0 {
		t.Errorf("b before a commits: %+v, want no work", w["b"])
	}
	if err := e.Commit(bs[0].ID, Result{Data: map[string][][]byte{"mid": {mid}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Work(10)["b"]; got.Pieces != 4 || got.QueuedBytes != int64(len(mid)) {
		t.Errorf("b with a's output queued: %+v, want 4 pieces of %d bytes", got, len(mid))
	}
	if got := e.Work(2)["b"].Pieces; got != 2 {
		t.Errorf("b's pieces with a limit of 2: %d", got)
	}
	if len(e.Work(10)["a"].Flight) != 0 {
		t.Errorf("a still has a bundle in flight after its commit")
	}
}
