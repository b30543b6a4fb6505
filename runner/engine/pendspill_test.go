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
	"github.com/beam-runner/beam-runner/runner/store"
)

// pendCoders add GroupByKey output in the global window to simCoders.
var pendCoders = func() map[string]*pipepb.Coder {
	m := map[string]*pipepb.Coder{
		"wv-gkvi": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kvi", "gw"}},
	}
	for k, v := range simCoders {
		m[k] = v
	}
	return m
}()

// pendPipeline is a batch job: impulse, a stage generating keyed values,
// a default-trigger GroupByKey, and a sink reading the groups (several
// MiB of them, so the GroupByKey fires many output chunks at once).
func pendPipeline(t *testing.T) Spec {
	t.Helper()
	c := func(id string) *coders.WindowedValueCodec {
		w, err := coders.CompileWindowedValue(pendCoders, id)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	key, err := coders.Compile(pendCoders, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		MaxBundles: 3, MinBundleBytes: 1 << 10,
		PColls: map[string]PCollSpec{
			"imp": {Codec: c("wv-b")}, "kv": {Codec: c("wv-kv"), Key: key}, "grouped": {Codec: c("wv-gkvi")},
		},
		Stages: []StageSpec{
			{ID: "imp", Kind: stagekind.Impulse, Outputs: []string{"imp"}},
			{ID: "gen", Kind: stagekind.SDK, Inputs: []string{"imp"}, Outputs: []string{"kv"}},
			{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"kv"}, Outputs: []string{"grouped"}, Agg: agg.Config{Window: coders.GlobalWindow}},
			{ID: "sink", Kind: stagekind.SDK, Inputs: []string{"grouped"}},
		},
	}
}

// genOutput is what "gen" writes: 100 chunks of 1,000 values of 40 B over
// 23 keys (4 MB).
func genOutput() [][]byte {
	var out [][]byte
	for c := 0; c < 100; c++ {
		var kvs []string
		for i := 0; i < 1000; i++ {
			n := c*1000 + i
			kvs = append(kvs, fmt.Sprintf("k%02d", n%23), fmt.Sprintf("%040d", n))
		}
		out = append(out, globalKV(int64(c%5), kvs...))
	}
	return out
}

// pendRun runs spec to completion, playing the SDK stages, and returns
// what the sink received (each group's key and sorted values, sorted) and
// the most input bytes the sink had in flight at once. With snap, it
// snapshots the engine once the sink has spilled pending input and goes
// on with an engine restored from it under restoreSpec.
func pendRun(t *testing.T, spec, restoreSpec Spec, snap bool) (groups []string, maxFlight int, snapped bool) {
	t.Helper()
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, maxFlight = pendDrive(t, e, func(e *Engine, _ []string) *Engine {
		if !snap || snapped || !hasSpilled(e) {
			return e
		}
		acknowledgeLast(e)
		data, err := e.snapshotAtRest()
		if err != nil {
			t.Fatal(err)
		}
		if e, err = Restore(restoreSpec, data); err != nil {
			t.Fatal(err)
		}
		snapped = true
		return e
	})
	return groups, maxFlight, snapped
}

// pendDrive runs e to completion, playing pendPipeline's SDK stages, and
// returns what the sink received, sorted, and the most input bytes it had
// in flight at once. After each round of commits, between, if set, is
// given the groups so far and may give the engine to go on with.
func pendDrive(t *testing.T, e *Engine, between func(e *Engine, sofar []string) *Engine) (groups []string, maxFlight int) {
	t.Helper()
	for !e.flow.done() {
		bs := nextReady(e).Bundles
		if e.flow.err != nil {
			t.Fatal(e.flow.err)
		}
		if len(bs) == 0 && bundlesInFlight(e) == 0 {
			t.Fatalf("stuck: nothing ready and nothing in flight (pend %+v)", e.flow.pend)
		}
		flight := 0
		for _, b := range bs {
			if b.Stage == "sink" {
				for _, c := range b.Input {
					flight += len(c)
				}
			}
		}
		maxFlight = max(maxFlight, flight)
		for _, b := range bs {
			groups = append(groups, pendPlay(t, e, b)...)
		}
		if between != nil {
			e = between(e, groups)
		}
	}
	slices.Sort(groups)
	return groups, maxFlight
}

// pendPlay runs and commits a bundle of pendPipeline, returning the
// groups the sink received.
func pendPlay(t *testing.T, e *Engine, b Bundle) (groups []string) {
	t.Helper()
	res := Result{Data: map[string][][]byte{}}
	switch b.Stage {
	case "gen":
		res.Data["kv"] = genOutput()
	case "sink":
		err := coders.Each(b.Input, e.flow.spec.PColls["grouped"].Codec, func(v *coders.WindowedValue) error {
			g, err := decodeGroup(v.Elem)
			groups = append(groups, g)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Commit(b.ID, res); err != nil {
		t.Fatal(err)
	}
	return groups
}

func hasSpilled(e *Engine) bool {
	for _, st := range e.flow.stages {
		for _, c := range st.pending {
			if c.spillKey != nil {
				return true
			}
		}
	}
	return false
}

// decodeGroup reads KV(bytes key, iterable(bytes)) as "key:v1,v2,..."
// with the values sorted.
func decodeGroup(b []byte) (string, error) {
	k, n, err := coders.LengthPrefixed(b)
	if err != nil {
		return "", err
	}
	b = b[n:]
	count, n, err := coders.IterableHeader(b)
	if err != nil {
		return "", err
	}
	b = b[n:]
	vals := make([]string, 0, max(count, 0))
	for i := int32(0); i < count; i++ {
		v, n, err := coders.LengthPrefixed(b)
		if err != nil {
			return "", err
		}
		vals, b = append(vals, string(v)), b[n:]
	}
	slices.Sort(vals)
	return string(k) + ":" + strings.Join(vals, ","), nil
}

// TestPendingSpillIsInvisible is metamorphic: the job's sink receives the
// same groups with pending input spilled past a budget far below the
// GroupByKey's output (and the GroupByKey itself spilling) as with
// everything in memory, never holds much more than the budget in flight,
// and leaves nothing in the store. A snapshot taken with input spilled
// restores, without a spill, to the same result.
func TestPendingSpillIsInvisible(t *testing.T) {
	plain := pendPipeline(t)
	want, wantFlight, _ := pendRun(t, plain, plain, false)
	if len(want) != 23 {
		t.Fatalf("the sink got %d groups, want 23", len(want))
	}
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const budget = 1 << 20
	limited := pendPipeline(t)
	limited.PendingSpill, limited.PendingBudget = st.Space("p/"), budget
	limited.Stages[2].Agg.Spill, limited.Stages[2].Agg.SpillBudget = st.Space("g/"), 64<<10
	before := st.WrittenBytes()
	got, gotFlight, _ := pendRun(t, limited, limited, false)
	if !slices.Equal(got, want) {
		t.Fatalf("with a spill the sink got %d groups, differing from the %d in memory", len(got), len(want))
	}
	if w := st.WrittenBytes() - before; w < 4<<20 {
		t.Errorf("the limited run wrote %d bytes to the store; want its values and pending input spilled", w)
	}
	// A bundle takes at least one chunk, of at most a pane (here < 300 KB)
	// or a 1 MiB chunk of panes.
	if gotFlight > budget+paneChunkBytes {
		t.Errorf("the sink had %d bytes in flight at once; budget %d", gotFlight, budget)
	}
	t.Logf("sink input in flight at once: %d bytes without a limit, %d with", wantFlight, gotFlight)
	if wantFlight <= gotFlight {
		t.Errorf("without a limit the sink had %d bytes in flight, with one %d: the budget did not bound it", wantFlight, gotFlight)
	}
	for _, prefix := range []string{"p/", "g/"} {
		if err := st.Space(prefix).Scan(nil, func(k, v []byte) error {
			t.Errorf("spill left key %q behind", k)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	restored, _, snapped := pendRun(t, limited, plain, true)
	if !snapped {
		t.Fatal("the limited run never had spilled pending input to snapshot")
	}
	if !slices.Equal(restored, want) {
		t.Fatalf("restored from a snapshot with spilled input, the sink got %d groups, differing from the %d in memory", len(restored), len(want))
	}
}

// TestMemoryCheckpoints: with or without a memory limit, a source bundle
// is checkpointed (Fraction 0) each time it has sent another
// sourceCheckpointBytes of output, even with no idle capacity for a
// dynamic split; output alone, not time, decides.
func TestMemoryCheckpoints(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, limited := range []bool{false, true} {
		spec := splittableSpec(t, 1)
		spec.Streaming = false // no checkpoints by time (streamCheckpoints)
		if limited {
			spec.PendingSpill, spec.PendingBudget = st.Space("m/"), 48<<20
		}
		e, bs := startOne(t, spec)
		const every = sourceCheckpointBytes
		e.AdvanceProcessingTime(1 << 40)
		e.NoteOutput(bs[0].ID, every-1)
		if got := e.splitRequests(); len(got) != 0 {
			t.Fatalf("limited=%v: checkpoint requested before %d bytes of output: %v", limited, every, got)
		}
		e.NoteOutput(bs[0].ID, every)
		got := e.splitRequests()
		want := []SplitRequest{{Bundle: bs[0].ID}}
		if !slices.Equal(got, want) {
			t.Fatalf("limited=%v: splitRequests = %v, want %v", limited, got, want)
		}
		if got := e.splitRequests(); len(got) != 0 {
			t.Fatalf("limited=%v: requested again at once: %v", limited, got)
		}
		e.NoteOutput(bs[0].ID, 2*every-1)
		if got := e.splitRequests(); len(got) != 0 {
			t.Fatalf("limited=%v: requested again before another %d bytes: %v", limited, every, got)
		}
		e.NoteOutput(bs[0].ID, 2*every)
		if got := e.splitRequests(); len(got) != 1 {
			t.Fatalf("limited=%v: after another %d bytes: %v, want another checkpoint", limited, every, got)
		}
	}
}

// fullQueue is a spill whose write queue reports itself full (agg.Queuing)
// while full is set.
type fullQueue struct {
	agg.Spill
	full bool
}

func (f *fullQueue) Queued() (int64, bool) { return 0, f.full }

// inMemoryAndStore is what pendPipeline's sink gets without a spill, and
// a store for a spilling run to compare with it, closed with the test.
func inMemoryAndStore(t *testing.T) ([]string, *store.Store) {
	t.Helper()
	plain := pendPipeline(t)
	want, _, _ := pendRun(t, plain, plain, false)
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return want, st
}

// TestFullSpillQueueKeepsDataInMemory: while the spill's write queue is
// full, the engine spills nothing, pending input nor grouped values, and
// keeps it in memory instead: here the queue fills while the bundle that
// produces everything runs. The output is the same, and once the queue
// takes more, it spills again.
func TestFullSpillQueueKeepsDataInMemory(t *testing.T) {
	want, st := inMemoryAndStore(t)
	for _, full := range []bool{true, false} {
		pend, gbk := &fullQueue{Spill: st.Space("p/")}, &fullQueue{Spill: st.Space("g/")}
		limited := pendPipeline(t)
		limited.PendingSpill, limited.PendingBudget = pend, 1<<20
		limited.Stages[2].Agg.Spill, limited.Stages[2].Agg.SpillBudget = gbk, 64<<10
		before := st.WrittenBytes()
		e, err := New(limited)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range nextReady(e).Bundles { // "gen", started with room in the queue
			pend.full, gbk.full = full, full
			got = append(got, pendPlay(t, e, b)...)
		}
		rest, _ := pendDrive(t, e, nil)
		got = append(got, rest...)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("full=%v: the sink got %d groups, differing from the %d in memory", full, len(got), len(want))
		}
		written := st.WrittenBytes() - before
		if full && written != 0 {
			t.Errorf("with the queue full the engine spilled %d bytes", written)
		}
		if !full && written < 4<<20 {
			t.Errorf("with room in the queue the engine spilled %d bytes; want its values and pending input", written)
		}
	}
}

// TestFullSpillQueueHoldsProducers: a batch job whose spill queue is full
// starts no bundle of the stages that produce into what spills, and looks
// again spillPollMs later; once the queue takes more, they run, and the
// output is what it is without a spill.
func TestFullSpillQueueHoldsProducers(t *testing.T) {
	want, st := inMemoryAndStore(t)
	gbk := &fullQueue{Spill: st.Space("g/"), full: true}
	limited := pendPipeline(t)
	limited.Stages[2].Agg.Spill, limited.Stages[2].Agg.SpillBudget = gbk, 64<<10
	limited.StartTime = 1000
	e, err := New(limited)
	if err != nil {
		t.Fatal(err)
	}
	rd := nextReady(e)
	if len(rd.Bundles) != 0 || !rd.Wake || rd.WakeAt != 1000+spillPollMs {
		t.Fatalf("with the queue full: %d bundles, wake %v at %d; want none, and a look again at %d", len(rd.Bundles), rd.Wake, rd.WakeAt, 1000+spillPollMs)
	}
	if ps := e.flow.stage("gen").fc.heldBy; !slices.Equal(ps, []string{spillHolder}) {
		t.Fatalf("gen is held by %q, want the spill queue", ps)
	}
	gbk.full = false
	e.AdvanceProcessingTime(rd.WakeAt)
	got, _ := pendDrive(t, e, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("the sink got %d groups, differing from the %d in memory", len(got), len(want))
	}
	if st.WrittenBytes() == 0 {
		t.Errorf("the GroupByKey spilled nothing once the queue had room")
	}
}

// TestFullSpillQueuePacesPanes: while the spill's queue is full, a
// GroupByKey hands its readers only what fits in the pending budget,
// since past it their input would stay in memory rather than spill; the
// output is the same once the queue takes more.
func TestFullSpillQueuePacesPanes(t *testing.T) {
	want, st := inMemoryAndStore(t)
	pend := &fullQueue{Spill: st.Space("p/")}
	limited := pendPipeline(t)
	limited.PendingSpill, limited.PendingBudget = pend, 128<<10
	e, err := New(limited)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	most, fullRounds := 0, 0
	for !e.flow.done() {
		rd := nextReady(e)
		for _, b := range rd.Bundles {
			if b.Stage == "gen" { // the queue fills while it runs
				pend.full = true
			}
			got = append(got, pendPlay(t, e, b)...)
			if pend.full {
				most = max(most, e.flow.pend.mem+e.flow.pend.flight)
			}
		}
		if pend.full {
			fullRounds++
			pend.full = fullRounds < 20 // then the writer catches up
		}
		if len(rd.Bundles) == 0 {
			if !rd.Wake {
				t.Fatal("nothing ready and no wake-up")
			}
			e.AdvanceProcessingTime(rd.WakeAt)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the sink got %d groups, differing from the %d in memory", len(got), len(want))
	}
	// A GroupByKey stops handing out once past its room: one pane over.
	if bound := 2 * limited.PendingBudget; most > bound {
		t.Errorf("pending input in memory reached %d bytes with the queue full; want about the budget, at most %d", most, bound)
	}
}
