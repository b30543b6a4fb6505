package savepoint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/savepoint"
)

func TestCheckAcceptsTheSamePipelineAndAChangedStatelessStep(t *testing.T) {
	old := steps(t, countingProto(t, t0, false))
	// Another start time changes the stateless impulse's payload only.
	if err := savepoint.Check(old, steps(t, countingProto(t, t0.Add(time.Hour), false)), nil); err != nil {
		t.Errorf("Check refused a pipeline whose stateful steps did not change: %v", err)
	}
}

func TestCheckRefusesAChangedValueCoderOfAStatefulStep(t *testing.T) {
	old := steps(t, countingProto(t, t0, false))
	now := steps(t, countingProto(t, t0, true))
	err := savepoint.Check(old, now, nil)
	if err == nil {
		t.Fatal("Check accepted a stateful step whose value coder changed from int to string")
	}
	run := find(t, old, savepoint.Stateful, "running").Name
	for _, want := range []string{
		`stateful step "` + run + `": its value coder changed from beam:coder:length_prefix:v1(beam:go:coder:custom:v1`,
		"to beam:coder:string_utf8:v1: the saved state could not be read",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "key coder") {
		t.Errorf("Check's error %q blames the key coder, which did not change", err)
	}
}

func TestCheckRefusesAMissingStatefulStepUnlessMapped(t *testing.T) {
	old := []savepoint.Step{{Name: "count/Stateful", Kind: savepoint.Stateful, Key: savepoint.Coder{Spec: "k"}, Value: savepoint.Coder{Spec: "v"}}}
	renamed := []savepoint.Step{{Name: "tally/Stateful", Kind: savepoint.Stateful, Key: savepoint.Coder{Spec: "k"}, Value: savepoint.Coder{Spec: "v"}}}
	err := savepoint.Check(old, renamed, nil)
	if err == nil || !strings.Contains(err.Error(), `stateful step "count/Stateful" is not in the new pipeline: its state would be lost`) {
		t.Errorf("Check of a removed stateful step: %v", err)
	}
	if err := savepoint.Check(old, renamed, savepoint.Mapping{"count/Stateful": "tally/Stateful"}); err != nil {
		t.Errorf("Check of a stateful step renamed by the mapping: %v", err)
	}
}

func TestCheckRefusesChangedStateAndTimersAndKinds(t *testing.T) {
	base := savepoint.Step{Name: "s", Kind: savepoint.Stateful, State: map[string]string{"a": "bag(x)", "b": "value(y)"}, Timers: []string{"t"}}
	now := savepoint.Step{Name: "s", Kind: savepoint.Stateful, State: map[string]string{"a": "bag(z)"}}
	grp := savepoint.Step{Name: "g", Kind: savepoint.Grouping}
	err := savepoint.Check([]savepoint.Step{base, grp}, []savepoint.Step{now, {Name: "g", Kind: savepoint.Stateful}}, nil)
	for _, want := range []string{
		`stateful step "s": its state "a" changed from bag(x) to bag(z)`,
		`stateful step "s": its state "b" (value(y)) was removed`,
		`stateful step "s": its timer family "t" was removed`,
		`grouping step "g": was a grouping step, is now a stateful one`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error %v does not say %q", err, want)
		}
	}
	added := now
	added.State = map[string]string{"a": "bag(x)", "b": "value(y)", "c": "bag(q)"}
	added.Timers = []string{"t", "u"}
	if err := savepoint.Check([]savepoint.Step{base}, []savepoint.Step{added, grp}, nil); err != nil {
		t.Errorf("Check refused added state, timers and steps: %v", err)
	}
}

// A mapping renames a step by its name, or a composite's and all inside
// it by the longest prefix; other names stay.
func TestMappingApply(t *testing.T) {
	m := savepoint.Mapping{"count": "tally", "count/inner": "deep", "x/y": "z"}
	for in, want := range map[string]string{
		"count": "tally", "count/Stateful": "tally/Stateful", "count/inner/a": "deep/a",
		"counter/a": "counter/a", "x/y": "z", "x/yz": "x/yz", "other": "other",
	} {
		if got := m.Apply(in); got != want {
			t.Errorf("Apply(%q) = %q, want %q", in, got, want)
		}
	}
}

// A grouping step whose windowing changed is refused; a removed step is
// let go with allowDropped.
func TestCheckRefusesChangedWindowingAndAllowsDropping(t *testing.T) {
	old := []savepoint.Step{{Name: "g", Kind: savepoint.Grouping, Windowing: "fixed(1s)"}, {Name: "s", Kind: savepoint.Stateful}}
	now := []savepoint.Step{{Name: "g", Kind: savepoint.Grouping, Windowing: "fixed(2s)"}}
	err := savepoint.CheckDropping(old, now, nil, true)
	if err == nil || !strings.Contains(err.Error(), `grouping step "g": its windowing changed from fixed(1s) to fixed(2s)`) || strings.Contains(err.Error(), `"s"`) {
		t.Errorf("CheckDropping: %v", err)
	}
}
