package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// stableSpec: a TestStream of two elements (handed out in two bundles), a stage "rand" that (in the
// test) outputs a random value per element, and the stage "stable" of a
// DoFn requiring stable input reading what rand commits, streaming.
func stableSpec(t *testing.T) Spec {
	t.Helper()
	return Spec{
		Streaming: true, MaxBundles: 4,
		PColls: map[string]PCollSpec{"src": {Codec: wvCodec(t, "wv-kv")}, "mid": {Codec: wvCodec(t, "wv-kv")}},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: globalKV(1, "a", "1", "b", "2")},
			}},
			{ID: "rand", Kind: stagekind.SDK, Inputs: []string{"src"}, Outputs: []string{"mid"}},
			{ID: "stable", Kind: stagekind.SDK, Inputs: []string{"mid"}},
		},
	}
}

// randomOut is what a nondeterministic rand bundle outputs.
func randomOut() Result {
	return Result{Data: map[string][][]byte{"mid": {globalKV(1, "r", fmt.Sprint(rand.Int64()))}}}
}

// The input a stable-input stage reads is what its producer committed,
// and a checkpoint holds it: taken with the stable bundle and a rand
// bundle in flight, the restored engine hands the stable stage exactly
// the committed bytes again, and never the in-flight rand bundle's
// output, which is recomputed (differently) by rand's bundle run again.
func TestStableInputCheckpointed(t *testing.T) {
	e, err := New(stableSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	var committed []byte
	var stableIn [][]byte
	randInFlight := false
	for round := 0; round < 10 && stableIn == nil; round++ {
		for _, b := range nextReady(e).Bundles {
			switch {
			case b.Stage == "rand" && committed == nil:
				out := randomOut()
				committed = out.Data["mid"][0]
				if err := e.Commit(b.ID, out); err != nil {
					t.Fatal(err)
				}
			case b.Stage == "stable":
				stableIn = b.Input // left in flight, like further rand bundles
			default:
				randInFlight = true
			}
		}
	}
	if stableIn == nil || !bytes.Equal(bytes.Join(stableIn, nil), committed) {
		t.Fatalf("stable stage was handed %x, rand committed %x", stableIn, committed)
	}
	if !randInFlight {
		t.Fatal("no rand bundle in flight at the checkpoint")
	}
	acknowledgeLast(e)
	snap, err := e.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(stableSpec(t), snap)
	if err != nil {
		t.Fatal(err)
	}
	var after [][]byte
	for round := 0; round < 10; round++ {
		for _, b := range nextReady(r).Bundles {
			res := Result{}
			if b.Stage == "rand" {
				res = randomOut()
			} else {
				after = append(after, bytes.Join(b.Input, nil))
			}
			if err := r.Commit(b.ID, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(after) == 0 || !bytes.Equal(after[0], committed) {
		t.Fatalf("after the restore the stable stage first read %x, want the committed %x", after, committed)
	}
	if len(after) != 2 {
		t.Errorf("stable stage read %d bundles after the restore, want 2 (the committed input, then the requeued rand bundle's new output)", len(after))
	}
	for _, in := range after[1:] {
		if bytes.Contains(in, committed) {
			t.Errorf("the committed input %x was handed to the stable stage again: %x", committed, in)
		}
	}
}
