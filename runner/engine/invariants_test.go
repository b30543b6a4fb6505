package engine

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/cockroachdb/datadriven"
)

// invariantScript leaves a stateful stage with bundles in flight and a
// combiner tree with a combine running, for the corruptions below.
const invariantScript = `
pipeline streaming max-bundles=1 start=1000
pcoll src
pcoll pre
pcoll grouped grouped
stage ts teststream out=src
stage st sdk keyed in=src out=pre
stage gbk gbk in=pre out=grouped combine=1
event ts add src a:1@1 b:2@2
----
ok

ready
----
bundle 1 stage=st keys=(a,b)
  a:1@1
  b:2@2

commit 1
output pre a:1@1 a:1@1
----
ok

ready
----
bundle 2 stage=gbk/combine-tree
  a:[1,1]@EOGW
`

// TestInvariantsCatchBrokenBookkeeping: each check finds the corruption it
// is there for, and the engine as the script leaves it passes them all.
func TestInvariantsCatchBrokenBookkeeping(t *testing.T) {
	for _, c := range []struct {
		name, want string
		corrupt    func(e *Engine)
	}{
		{"sound", "", func(*Engine) {}},
		{"bundle lost from its stage", "in the stages' flights", func(e *Engine) {
			delete(e.flow.stage("gbk").flight, 2)
		}},
		{"retry not in flight", "waits to retry", func(e *Engine) {
			e.retries = append(e.retries, &bundle{Bundle: Bundle{ID: 99}})
		}},
		{"pending budget drift", "pending budget counts", func(e *Engine) {
			e.flow.pend = &pendingSpill{mem: 10, budget: 100}
		}},
		{"uncounted bytes", "no pending budget", func(e *Engine) {
			e.flight[2].mem = 5
		}},
		{"watermark ahead", "ahead of", func(e *Engine) {
			e.flow.stage("gbk").outWM = e.flow.stage("gbk").inWM + 1
		}},
		{"watermark back", "went back", func(e *Engine) {
			e.invariantErr() // remembers the watermarks: as if pre's were later
			e.inv.pcoll["pre"]++
		}},
		{"busy key no bundle owns", "keys busy", func(e *Engine) {
			e.flow.stage("st").keyed.busy["z"] = true
		}},
		{"combine forgotten", "combines out", func(e *Engine) {
			st := e.flow.stage("gbk")
			delete(st.flight, 2)
			delete(e.flight, 2)
		}},
	} {
		s := &script{}
		datadriven.RunTestFromString(t, invariantScript, s.run)
		e := s.eng.e
		c.corrupt(e)
		err := e.invariantErr()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: invariantErr() = %v, want an error with %q", c.name, err, c.want)
		}
	}
	// A GroupByKey's output watermark past a window its combine holds (the
	// watermark checks would also see it ahead of its input).
	s := &script{}
	datadriven.RunTestFromString(t, invariantScript, s.run)
	st := s.eng.e.flow.stage("gbk")
	st.outWM = coders.MaxTimestamp
	if err := s.eng.e.flow.checkCombineHolds(st); err == nil || !strings.Contains(err.Error(), "waits for a combine") {
		t.Errorf("checkCombineHolds() = %v, want the watermark past a waiting window", err)
	}
}

// TestInvariantViolationPanicsUnderTag: with the invariants tag a broken
// invariant stops the call that broke it; without, nothing is checked.
func TestInvariantViolationPanicsUnderTag(t *testing.T) {
	s := &script{}
	datadriven.RunTestFromString(t, invariantScript, s.run)
	e := s.eng.e
	e.flow.stage("st").keyed.busy["z"] = true
	defer func() {
		r := recover()
		if invariants != (r != nil) || (r != nil && !strings.Contains(r.(string), "after test")) {
			t.Errorf("invariants=%v, recovered %v", invariants, r)
		}
	}()
	e.checkInvariants("test")
}
