package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/cockroachdb/datadriven"
)

// TestSplitsKeepHostsEven plays a CPU-bound stage on three slots (hosts)
// whose input arrives as bundles of various sizes, with a fake SDK that
// answers splits as Beam's do, at element boundaries; the dynamic splits
// must end the job within 8% of the time an even spread would take
// (issue #28). Splitting the oldest bundle in half took 12% longer with
// one bundle of 120 and 9% with a small old bundle and a large new one.
func TestSplitsKeepHostsEven(t *testing.T) {
	cases := []struct {
		name  string
		sizes []int   // elements of each arriving bundle
		at    []int64 // when each arrives, ms
		cost  float64 // ms an element takes
	}{
		{"one bundle", []int{120}, []int64{0}, 310},
		{"small old bundle, large new one", []int{20, 130}, []int64{0, 100}, 310},
		{"two bundles", []int{60, 60}, []int64{0, 0}, 310},
		{"three, then a fourth", []int{40, 40, 40, 30}, []int64{0, 0, 0, 100}, 310},
		{"two waves", []int{30, 30, 30, 30, 30, 15}, []int64{0, 0, 0, 9000, 9100, 9200}, 310},
		{"cheap elements", []int{2000, 2000, 600}, []int64{0, 0, 0}, 9.3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			total := 0
			for _, n := range c.sizes {
				total += n
			}
			s := newBalanceSim(t, len(c.sizes), 3, c.cost)
			took := s.run(t, c.sizes, c.at)
			even := float64(total) * c.cost / 3
			t.Logf("%d ms, %.2f of an even spread's %.0f ms", took, float64(took)/even, even)
			if float64(took) > 1.08*even {
				t.Errorf("took %d ms, more than 1.08 of an even spread's %.0f ms:\n%s", took, even, strings.Join(s.log, "\n"))
			}
		})
	}
}

// balanceSim is the engine running stage work, fed by one upstream
// bundle per arrival, and the fake SDK's state.
type balanceSim struct {
	e       *Engine
	p       *scriptPipeline
	last    Ready
	now     int64
	cost    float64
	running map[int]*simRun
	answers []simAnswer
	log     []string
}

type simRun struct {
	pos   float64 // elements read
	owned int
}

type simAnswer struct {
	at       int64
	id       int
	fraction float64
}

// newBalanceSim declares upstream stages u0..un-1, whose bundles' outputs
// are the arrivals, flattened into the stage work with slots slots.
func newBalanceSim(t *testing.T, n, slots int, cost float64) *balanceSim {
	var decl strings.Builder
	var ups []string
	decl.WriteString("pcoll src\nstage ts teststream out=src\n")
	for i := range n {
		fmt.Fprintf(&decl, "pcoll m%d\nstage u%d sdk in=src out=m%d\n", i, i, i)
		ups = append(ups, fmt.Sprintf("m%d", i))
	}
	fmt.Fprintf(&decl, "pcoll mid\nstage fl flatten in=(%s) out=mid\n", strings.Join(ups, ","))
	fmt.Fprintf(&decl, "stage work sdk in=mid max-bundles=%d\nevent ts add src x:1@1\n", slots)
	// min-bundle-bytes: each arrival is one bundle, as is each residual.
	_, args, err := datadriven.ParseLine(fmt.Sprintf("pipeline streaming max-bundles=%d min-bundle-bytes=100000000", n+slots))
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePipeline(&datadriven.TestData{Pos: "sim", Cmd: "pipeline", CmdArgs: args, Input: decl.String()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p.spec)
	if err != nil {
		t.Fatal(err)
	}
	return &balanceSim{e: e, p: p, cost: cost, running: map[int]*simRun{}}
}

// run plays the job in steps of 10 ms, ticking every 200 ms as the driver
// does, and returns when its last bundle ended.
func (s *balanceSim) run(t *testing.T, sizes []int, at []int64) int64 {
	s.round(t) // the upstream bundles 1..n start
	arrived := 0
	for s.now < 1e6 {
		s.now += 10
		s.e.AdvanceProcessingTime(s.now)
		for arrived < len(sizes) && at[arrived] <= s.now {
			s.arrive(t, arrived, sizes[arrived])
			arrived++
			s.round(t) // each arrival is cut into a bundle of its own
		}
		s.work(t)
		kept := s.answers[:0]
		for _, a := range s.answers {
			if a.at <= s.now {
				s.answer(t, a)
			} else {
				kept = append(kept, a)
			}
		}
		s.answers = kept
		if s.now%200 == 0 {
			s.e.Tick()
		}
		s.round(t)
		if arrived == len(sizes) && len(s.e.flight) == 0 {
			return s.now
		}
	}
	t.Fatalf("the job did not end:\n%s", strings.Join(s.log, "\n"))
	return 0
}

// arrive commits upstream bundle i+1 with n elements for work.
func (s *balanceSim) arrive(t *testing.T, i, n int) {
	pc := fmt.Sprintf("m%d", i)
	elems := make([]string, n)
	for j := range elems {
		elems[j] = fmt.Sprintf("k%d:%d@1", i, j)
	}
	data, err := s.p.byID[pc].encode(elems)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.e.Commit(i+1, Result{Data: map[string][][]byte{pc: {data}}}); err != nil {
		t.Fatal(err)
	}
}

// work advances the running bundles by 10 ms and commits those done.
func (s *balanceSim) work(t *testing.T) {
	for id, r := range s.running {
		r.pos += 10 / s.cost
		if r.pos < float64(r.owned) {
			continue
		}
		if err := s.e.Commit(id, Result{}); err != nil {
			t.Fatal(err)
		}
		delete(s.running, id)
		s.log = append(s.log, fmt.Sprintf("%6d end %d", s.now, id))
	}
}

// round acknowledges the last Ready and reads the next: it starts its
// bundles of work and answers its splits 30 ms later.
func (s *balanceSim) round(t *testing.T) {
	s.e.Advance(s.last)
	s.last = s.e.Ready()
	if s.last.Err != nil {
		t.Fatal(s.last.Err)
	}
	for _, b := range s.last.Bundles {
		if b.Stage != "work" {
			continue
		}
		n := 0
		err := coders.Each(b.Input, s.e.flow.pcolls["mid"].spec.Codec, func(*coders.WindowedValue) error { n++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		s.running[b.ID] = &simRun{owned: n}
		s.log = append(s.log, fmt.Sprintf("%6d start %d with %d", s.now, b.ID, n))
	}
	for _, sr := range s.last.Splits {
		s.answers = append(s.answers, simAnswer{at: s.now + 30, id: sr.Bundle, fraction: sr.Fraction})
	}
}

// answer splits a running bundle as the SDKs do: it keeps the fraction
// asked of what remains past its position, and the element it is on.
func (s *balanceSim) answer(t *testing.T, a simAnswer) {
	r := s.running[a.id]
	if r == nil {
		return // it ended meanwhile
	}
	first := int(math.Ceil(r.pos + a.fraction*(float64(r.owned)-r.pos)))
	first = max(first, int(r.pos)+1)
	if first >= r.owned {
		return // nothing to give up: the SDK refuses
	}
	if _, err := s.e.ApplySplit(a.id, SplitResult{FirstResidual: first}); err != nil {
		t.Fatal(err)
	}
	s.log = append(s.log, fmt.Sprintf("%6d split %d at %.1f keeping %d of %d", s.now, a.id, r.pos, first, r.owned))
	r.owned = first
}
