package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// The split bookkeeping is model-checked: a fake SDK works through bundles
// of restrictions one unit at a time and answers random split requests as
// Beam's SDKs do (keep a prefix of the remaining work, give up the rest as
// an element residual and/or a channel split), while some bundles fail
// after splitting and are retried on what the engine says they still own.
// Whatever the sequence, every unit of every element is committed exactly
// once. Splitting a bundle several times used to hand the elements past
// the first channel split back once per split.
func TestSplitsAccountEveryUnitOnce(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			sizes := make([]int, 1+rng.Intn(6))
			for i := range sizes {
				sizes[i] = rng.Intn(12)
			}
			if err := runSplitModel(t, rng, sizes); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// restriction is an element of the model: units [from, to) of element id.
type restriction struct {
	id, from, to int
}

func (r restriction) encode() []byte {
	return globalKV(0, strconv.Itoa(r.id), fmt.Sprintf("%d:%d", r.from, r.to))
}

func decodeRestriction(t *testing.T, wv *coders.WindowedValueCodec, raw []byte) restriction {
	t.Helper()
	var v coders.WindowedValue
	if _, err := wv.Parse(raw, &v); err != nil {
		t.Fatal(err)
	}
	k, n, err := coders.LengthPrefixed(v.Elem)
	if err != nil {
		t.Fatal(err)
	}
	val, _, err := coders.LengthPrefixed(v.Elem[n:])
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(string(k))
	from, to, _ := strings.Cut(string(val), ":")
	f, _ := strconv.Atoi(from)
	e, _ := strconv.Atoi(to)
	return restriction{id: id, from: f, to: e}
}

// modelBundle is the fake SDK's view of one running bundle.
type modelBundle struct {
	id    int
	elems []restriction // as received; the last owned one may shrink
	owned int           // elements still owned (channel split end)
	cur   int           // element being processed
	pos   int           // next unit of elems[cur]
	done  []restriction // units processed by this attempt
}

func newModelBundle(t *testing.T, wv *coders.WindowedValueCodec, id int, input [][]byte) *modelBundle {
	mb := &modelBundle{id: id}
	raws, err := coders.ElementsFrom(input, wv, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range raws {
		mb.elems = append(mb.elems, decodeRestriction(t, wv, raw))
	}
	mb.owned = len(mb.elems)
	if len(mb.elems) > 0 {
		mb.pos = mb.elems[0].from
	}
	return mb
}

func (mb *modelBundle) finished() bool { return mb.cur >= mb.owned }

// step processes one unit (or skips an empty or finished element).
func (mb *modelBundle) step() {
	r := mb.elems[mb.cur]
	if mb.pos < r.to {
		mb.done = append(mb.done, restriction{id: r.id, from: mb.pos, to: mb.pos + 1})
		mb.pos++
	}
	if mb.pos >= r.to {
		mb.cur++
		if mb.cur < mb.owned {
			mb.pos = mb.elems[mb.cur].from
		}
	}
}

// split answers a split request: keep about fraction of the remaining
// units, as an SDK does, splitting inside the current element or at an
// element boundary.
func (mb *modelBundle) split(rng *rand.Rand) (SplitResult, bool) {
	if mb.finished() {
		return SplitResult{}, false
	}
	r := mb.elems[mb.cur]
	if rng.Intn(2) == 0 && mb.pos < r.to-1 {
		at := mb.pos + 1 + rng.Intn(r.to-mb.pos-1)
		res := SplitResult{
			FirstResidual: mb.cur + 1,
			Primary:       [][]byte{restriction{r.id, r.from, at}.encode()},
			Residuals:     []Residual{{Element: restriction{r.id, at, r.to}.encode()}},
		}
		mb.elems[mb.cur].to = at
		mb.owned = mb.cur + 1
		return res, true
	}
	k := mb.cur + 1 + rng.Intn(mb.owned-mb.cur)
	if k > mb.owned {
		return SplitResult{}, false
	}
	mb.owned = k
	return SplitResult{FirstResidual: k}, true
}

func runSplitModel(t *testing.T, rng *rand.Rand, sizes []int) error {
	var src []byte
	for id, n := range sizes {
		src = append(src, restriction{id, 0, n}.encode()...)
	}
	spec := Spec{
		Streaming: true, MaxBundles: 1 + rng.Intn(3),
		PColls: map[string]PCollSpec{"src": {Codec: wvCodec(t, "wv-kv")}},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: src},
			}},
			{ID: "sdf", Kind: stagekind.SDK, Splittable: true, Inputs: []string{"src"}},
		},
	}
	e, err := New(spec)
	if err != nil {
		return err
	}
	wv := wvCodec(t, "wv-kv")
	committed := map[[2]int]int{}
	running := map[int]*modelBundle{}
	for steps := 0; steps < 100000; steps++ {
		for _, b := range nextReady(e).Bundles {
			running[b.ID] = newModelBundle(t, wv, b.ID, b.Input)
		}
		if len(running) == 0 {
			if !e.flow.done() {
				return fmt.Errorf("nothing runs but the engine is not done")
			}
			break
		}
		mb := pickBundle(rng, running)
		switch roll := rng.Intn(10); {
		case mb.finished():
			for _, u := range mb.done {
				if committed[[2]int{u.id, u.from}]++; committed[[2]int{u.id, u.from}] > 1 {
					return fmt.Errorf("element %d unit %d committed twice", u.id, u.from)
				}
			}
			delete(running, mb.id)
			if err := e.Commit(mb.id, Result{}); err != nil {
				return err
			}
		case roll == 0:
			if res, ok := mb.split(rng); ok {
				if _, err := e.ApplySplit(mb.id, res); err != nil {
					return err
				}
			}
		case roll == 1:
			// The attempt fails: its work is dropped and it starts again
			// on what the bundle still owns.
			in, err := e.ownedInput(mb.id)
			if err != nil {
				return err
			}
			running[mb.id] = newModelBundle(t, wv, mb.id, in)
		default:
			mb.step()
		}
	}
	for id, n := range sizes {
		for u := 0; u < n; u++ {
			if got := committed[[2]int{id, u}]; got != 1 {
				return fmt.Errorf("element %d unit %d committed %d times", id, u, got)
			}
		}
	}
	return nil
}

func pickBundle(rng *rand.Rand, running map[int]*modelBundle) *modelBundle {
	// Map order is random; sort for a seed-determined choice.
	ids := slices.Sorted(maps.Keys(running))
	return running[ids[rng.Intn(len(ids))]]
}
