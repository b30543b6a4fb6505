package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// ownerJob plays the driver and the SDK for TestOwnerMergeModel.
type ownerJob struct {
	t       *testing.T
	e       *Engine
	rng     *rand.Rand
	flight  []*ownerBundle
	panes   []string
	req     *coders.WindowedValueCodec
	grouped *coders.WindowedValueCodec
}

// ownerBundle is a bundle in flight and how many of its leading input
// elements it still owns after the splits applied to it.
type ownerBundle struct {
	b     Bundle
	owned int
}

// runOwnerJob runs the job to its end and returns the panes the sink read.
func runOwnerJob(t *testing.T, spec Spec, rng *rand.Rand) ([]string, error) {
	e, err := New(spec)
	if err != nil {
		return nil, err
	}
	j := &ownerJob{t: t, e: e, rng: rng, req: ownerCodec(t, "wv-req"), grouped: ownerCodec(t, "wv-ckvg")}
	for range 100000 {
		if len(j.flight) == 0 || rng.Intn(3) == 0 {
			done, err := j.ready()
			if err != nil || done {
				slices.Sort(j.panes)
				return j.panes, err
			}
			if len(j.flight) == 0 {
				return nil, fmt.Errorf("the engine is neither done nor ready to run anything")
			}
		}
		if err := j.step(j.rng.Intn(len(j.flight))); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("the job did not end")
}

// ready takes the bundles the engine hands out.
func (j *ownerJob) ready() (bool, error) {
	r := nextReady(j.e)
	if r.Err != nil || r.Done {
		return r.Done, r.Err
	}
	for _, b := range r.Bundles {
		n, err := countElements(b.Input, j.req)
		if b.Stage != "mw" {
			n, err = 0, nil
		}
		if err != nil {
			return false, err
		}
		j.flight = append(j.flight, &ownerBundle{b: b, owned: n})
	}
	return false, nil
}

func countElements(chunks [][]byte, wv *coders.WindowedValueCodec) (int, error) {
	n := 0
	err := coders.Each(chunks, wv, func(*coders.WindowedValue) error { n++; return nil })
	return n, err
}

// step acts on the i-th bundle in flight: a merge bundle is split, fails
// with its worker lost, or commits its answers in chunks; a sink bundle
// records its panes.
func (j *ownerJob) step(i int) error {
	ob := j.flight[i]
	if ob.b.Stage == "mw" {
		switch k := j.rng.Intn(10); {
		case k < 3 && ob.owned > 1:
			first := 1 + j.rng.Intn(ob.owned-1)
			if _, err := j.e.ApplySplit(ob.b.ID, SplitResult{FirstResidual: first}); err != nil {
				return err
			}
			ob.owned = first
			return nil
		case k < 4 && ob.b.Attempt < j.e.MaxAttempts():
			j.flight = slices.Delete(j.flight, i, i+1)
			if again, why := j.e.Retry(ob.b.ID, Failure{Worker: "w1", Workers: 2}); !again {
				return fmt.Errorf("merge bundle %d not retried: %s", ob.b.ID, why)
			}
			return nil
		}
	}
	j.flight = slices.Delete(j.flight, i, i+1)
	res := Result{Data: map[string][][]byte{}}
	switch ob.b.Stage {
	case "mw":
		out, err := j.answer(ob)
		if err != nil {
			return err
		}
		res.Data["mw-out"] = out
	case "sink":
		if err := j.readPanes(ob.b.Input); err != nil {
			return err
		}
	}
	return j.e.Commit(ob.b.ID, res)
}

// answer is the SDK's merge_windows output for the bundle's owned
// requests, cut at random element boundaries into chunks.
func (j *ownerJob) answer(ob *ownerBundle) ([][]byte, error) {
	var out [][]byte
	var cur []byte
	n := 0
	err := coders.Each(ob.b.Input, j.req, func(v *coders.WindowedValue) error {
		if n++; n > ob.owned {
			return nil
		}
		a, err := ownerAnswer(v.Elem)
		cur = coders.AppendWindowedValue(cur, coders.MinTimestamp, 1, nil, coders.NoFiringPane, a)
		if j.rng.Intn(3) == 0 {
			out, cur = append(out, cur), nil
		}
		return err
	})
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, err
}

// ownerAnswer answers one request KV<nonce, iterable<window>> with
// KV<nonce, KV<unmerged windows, iterable<KV<merged window, originals>>>>.
func ownerAnswer(req []byte) ([]byte, error) {
	nonce, n, err := coders.LengthPrefixed(req)
	if err != nil {
		return nil, err
	}
	cw, err := coders.Compile(ownerCoders, "cw")
	if err != nil {
		return nil, err
	}
	var ws []ownerWin
	enc := map[ownerWin][]byte{}
	if _, err := coders.EachInIterable(req[n:], cw, func(b []byte) error {
		w, err := decodeOwnerWin(b)
		ws, enc[w] = append(ws, w), b
		return err
	}); err != nil {
		return nil, err
	}
	into := ownerMerge(ws)
	var unmerged [][]byte
	originals := map[ownerWin][][]byte{}
	for _, w := range ws {
		if o, ok := into[w]; ok {
			originals[o] = append(originals[o], enc[w])
		} else {
			unmerged = append(unmerged, enc[w])
		}
	}
	out := appendWindows(coders.AppendLengthPrefixed(nil, nonce), unmerged)
	out = coders.AppendIterableHeader(out, int32(len(originals)))
	for _, o := range slices.SortedFunc(maps.Keys(originals), func(a, b ownerWin) int { return int(a.start - b.start) }) {
		out = appendWindows(append(out, o.encode()...), originals[o])
	}
	return out, nil
}

// readPanes records the sink's input as panes.
func (j *ownerJob) readPanes(chunks [][]byte) error {
	bc, err := coders.Compile(ownerCoders, "bytes")
	if err != nil {
		return err
	}
	return coders.Each(chunks, j.grouped, func(v *coders.WindowedValue) error {
		w, err := decodeOwnerWin(v.Windows)
		if err != nil {
			return err
		}
		key, n, err := coders.LengthPrefixed(v.Elem)
		if err != nil {
			return err
		}
		var vals []string
		if _, err := coders.EachInIterable(v.Elem[n:], bc, func(b []byte) error {
			p, _, err := coders.LengthPrefixed(b)
			vals = append(vals, string(p))
			return err
		}); err != nil {
			return err
		}
		j.panes = append(j.panes, ownerPane(string(key), w, v.Timestamp, v.Pane, vals))
		return nil
	})
}
