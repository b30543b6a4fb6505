package engine

import (
	"bytes"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// retrySpec: a batch SDK stage reading a complete input "src" into "out".
func retrySpec(t *testing.T, attempts int) (Spec, []byte) {
	elems := globalKV(1, "a", "1", "b", "2")
	return Spec{
		MaxBundles: 1, MaxAttempts: attempts,
		PColls: map[string]PCollSpec{
			"src": {Codec: wvCodec(t, "wv-kv")},
			"out": {Codec: wvCodec(t, "wv-kv")},
		},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: elems},
			}},
			{ID: "sdk", Kind: stagekind.SDK, Inputs: []string{"src"}, Outputs: []string{"out"}},
		},
	}, elems
}

// A failed bundle runs again with the same input until its attempts run
// out; nothing is delivered until an attempt commits, and the watermark
// stays held meanwhile.
func TestRetryRerunsSameInputUntilAttemptsRunOut(t *testing.T) {
	spec, elems := retrySpec(t, 3)
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	bs := readyAfterEvents(t, e)
	id := bs[0].ID
	for attempt := 1; attempt <= 3; attempt++ {
		if bs[0].Attempt != attempt || bs[0].ID != id || !bytes.Equal(joinChunks(bs[0].Input), elems) {
			t.Fatalf("attempt %d: got bundle %d attempt %d input %x", attempt, bs[0].ID, bs[0].Attempt, joinChunks(bs[0].Input))
		}
		if e.Watermark("out") > 1 {
			t.Fatalf("attempt %d: out watermark %d passed the uncommitted input", attempt, e.Watermark("out"))
		}
		again := e.Retry(id)
		if want := attempt < 3; again != want {
			t.Fatalf("Retry after attempt %d = %v, want %v", attempt, again, want)
		}
		if !again {
			break
		}
		bs = e.Ready().Bundles
		if len(bs) != 1 {
			t.Fatalf("attempt %d: Ready = %d bundles, want the retried one", attempt+1, len(bs))
		}
	}
	if e.InFlight() != 0 {
		t.Errorf("in flight after giving up: %d", e.InFlight())
	}
}

// A retried bundle that then succeeds commits once.
func TestRetryThenCommit(t *testing.T) {
	spec, elems := retrySpec(t, 2)
	e, _ := New(spec)
	bs := readyAfterEvents(t, e)
	if !e.Retry(bs[0].ID) {
		t.Fatal("Retry refused a first failure with 2 attempts allowed")
	}
	bs = e.Ready().Bundles
	if err := e.Commit(bs[0].ID, Result{Data: map[string][][]byte{"out": {elems}}}); err != nil {
		t.Fatal(err)
	}
	if e.Retry(bs[0].ID) {
		t.Error("Retry of a committed bundle succeeded")
	}
}

// A bundle that gave up work by a split runs again on what it still owns;
// one whose split did not say which input it gave up is not run again.
func TestRetryOfSplitBundle(t *testing.T) {
	spec, elems := retrySpec(t, 4)
	e, _ := New(spec)
	bs := readyAfterEvents(t, e)
	if _, err := e.ApplySplit(bs[0].ID, SplitResult{FirstResidual: 1}); err != nil {
		t.Fatal(err)
	}
	if !e.Retry(bs[0].ID) {
		t.Fatal("Retry of a channel-split bundle refused")
	}
	again := e.Ready().Bundles
	first, _ := coders.ElementsFrom([][]byte{elems}, e.pcolls["src"].spec.Codec, 0)
	if r := retried(again); r.ID != bs[0].ID || !bytes.Equal(joinChunks(r.Input), first[0]) {
		t.Fatalf("retry of bundle %d: input %x, want element 0 only (%x)", r.ID, joinChunks(r.Input), first[0])
	}
	// Bundles are values: the first attempt's, still read by its driver
	// goroutine, is not changed by the retry.
	if bs[0].Attempt != 1 || !bytes.Equal(joinChunks(bs[0].Input), elems) {
		t.Errorf("first attempt changed to attempt %d input %x", bs[0].Attempt, joinChunks(bs[0].Input))
	}

	e, _ = New(spec)
	bs = readyAfterEvents(t, e)
	if _, err := e.ApplySplit(bs[0].ID, SplitResult{FirstResidual: -1, Residuals: []Residual{{Element: globalKV(1, "b", "2")}}}); err != nil {
		t.Fatal(err)
	}
	if e.Retry(bs[0].ID) {
		t.Error("Retry of a bundle whose split named no input succeeded")
	}
}

func retried(bs []Bundle) Bundle {
	for _, b := range bs {
		if b.Attempt > 1 {
			return b
		}
	}
	return Bundle{}
}

func readyAfterEvents(t *testing.T, e *Engine) []Bundle {
	t.Helper()
	for i := 0; i < 5; i++ {
		if bs := e.Ready().Bundles; len(bs) > 0 {
			return bs
		}
	}
	t.Fatal("no bundle became ready")
	return nil
}

func joinChunks(cs [][]byte) []byte { return bytes.Join(cs, nil) }
