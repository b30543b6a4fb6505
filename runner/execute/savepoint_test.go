package execute

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

func countingPlan(t *testing.T, start time.Time, extra bool) *plan.Plan {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	counting.Pipeline(start, start.Add(time.Minute), 20*time.Millisecond, false)(s)
	if extra {
		beam.ParDo(s.Scope("extra"), strings.ToUpper, beam.Create(s, "a", "b"))
	}
	pl, err := spec.Plan(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func countingProto(t *testing.T, start time.Time) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	counting.Pipeline(start, start.Add(time.Minute), 20*time.Millisecond, false)(s)
	return gopipe.ForTest(t, p)
}

func countingShape(t *testing.T, start time.Time, extra bool) shape {
	pl := countingPlan(t, start, extra)
	return shapeOf(planShape(pl), planNames(pl))
}

// A savepoint's checkpoint restores into the same fused plan: a
// stateless step whose code or payload changed keeps it; a step added
// changes it, and the refusal says where and why, naming the stages'
// transforms by unique name.
func TestShapeDiffOfRealPlans(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	old := countingShape(t, t0, false)
	if len(old.lines) == 0 {
		t.Fatal("empty shape")
	}
	if err := shapeDiff(old, countingShape(t, t0.Add(time.Hour), false)); err != nil {
		t.Errorf("a moved impulse (a stateless payload) changed the shape: %v", err)
	}
	err := shapeDiff(old, countingShape(t, t0, true))
	for _, want := range []string{`the new pipeline adds "Impulse", "beam.createFn", "extra/strings.ToUpper": `, "restores a savepoint only into a pipeline that fuses into the same stages"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("an added step: %v, want the shape refused saying %q", err, want)
		}
	}
	if err := shapeDiff(countingShape(t, t0, true), old); err == nil || !strings.Contains(err.Error(), `the new pipeline removes "Impulse", "beam.createFn", "extra/strings.ToUpper": `) {
		t.Errorf("a removed step: %v", err)
	}
	// A version 1 savepoint names no transforms: ids on both sides.
	noNames := shapeOf(old.lines, nil)
	if err := shapeDiff(noNames, countingShape(t, t0, false)); err != nil {
		t.Errorf("a version 1 savepoint's shape against the same plan: %v", err)
	}
	rewired := shapeOf(slices.Clone(old.lines), old.names)
	rewired.lines[1], rewired.lines[2] = rewired.lines[2], rewired.lines[1]
	if err := shapeDiff(old, rewired); err == nil || !strings.Contains(err.Error(), `where the new one has "stage`) || !strings.Contains(err.Error(), `(transforms "ticks/`) {
		t.Errorf("stages in another order: %v", err)
	}
	if err := shapeDiff(shapeOf([]string{"a", "b"}, nil), shapeOf([]string{"a"}, nil)); err == nil || !strings.Contains(err.Error(), `the savepoint's pipeline has "b", which the new one has not`) {
		t.Errorf("a shorter shape: %v", err)
	}
	if err := shapeDiff(shapeOf([]string{"a"}, nil), shapeOf([]string{"a", "c"}, nil)); err == nil || !strings.Contains(err.Error(), `the new pipeline has "c", which the savepoint's has not`) {
		t.Errorf("a longer shape: %v", err)
	}
}

// A stage's transforms are named by unique name, and one the runner made
// from a transform after the transform it came from; without names (a
// version 1 savepoint) the line is quoted alone.
func TestShapeDescribeNamesTransforms(t *testing.T) {
	s := shapeOf([]string{"stage s1 (kind 0): e2, e3/PairWithRestriction, x9", "pcollection n1: c"},
		map[string]string{"e2": "ticks/Impulse", "e3": "ticks/Sdf"})
	want := `"stage s1 (kind 0): e2, e3/PairWithRestriction, x9" (transforms "ticks/Impulse", "ticks/Sdf/PairWithRestriction", x9)`
	if got := s.describe(0); got != want {
		t.Errorf("describe(stage) = %s, want %s", got, want)
	}
	if got := s.describe(1); got != `"pcollection n1: c"` {
		t.Errorf("describe(pcollection) = %s", got)
	}
	if got := shapeOf(s.lines, nil).describe(0); got != `"stage s1 (kind 0): e2, e3/PairWithRestriction, x9"` {
		t.Errorf("describe without names = %s", got)
	}
}

// Restore refuses, naming the file, a savepoint whose checkpoint
// this executor cannot read (damaged, or of a newer checkpoint format
// with its digest made to match), and accepts the same plan's.
func TestCheckRestoreReadsTheCheckpoint(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	pl := countingPlan(t, t0, false)
	good, err := checkpoint{engine: []byte("e"), state: []byte("s")}.encode()
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte(checkpointMagic), binary.AppendUvarint(nil, checkpointVersion+1)...)
	e := New(Options{})
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"good", good, ""},
		{"damaged", good[:len(good)-1], "checkpoint.bin: checkpoint: section"},
		{"newer", newer, fmt.Sprintf("checkpoint.bin: checkpoint format version %d; this beam-runner reads versions 1 to %d", checkpointVersion+1, checkpointVersion)},
		{"not one", []byte("{}"), "checkpoint.bin: not a beam-runner checkpoint"},
	} {
		sp := &savepoint.Savepoint{Checkpoint: c.data, Pipeline: countingProto(t, t0), Manifest: savepoint.Manifest{Shape: planShape(pl), Transforms: planNames(pl)}}
		_, err := e.Restore(sp, countingProto(t, t0), nil, jobs.RestoreOptions{})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s checkpoint: %v, want %q", c.name, err, c.want)
		}
	}
}

// A change of the checkpoint format changes what a savepoint's
// checkpoint.bin holds, so an older server must refuse such savepoints
// by the savepoint's version, at submission: bump savepoint.Version with
// checkpointVersion, then this table. The savepoint version also moves
// alone, for the manifest's own fields (3: start_stage, windowing), so
// the table gives the savepoint version current with each checkpoint
// format.
func TestSavepointVersionFollowsTheCheckpointFormat(t *testing.T) {
	savepointFor := map[int]int{2: 3} // checkpoint format -> savepoint version
	if got, ok := savepointFor[checkpointVersion]; !ok || got != savepoint.Version {
		t.Errorf("checkpoint format %d with savepoint version %d: bump savepoint.Version (and docs/durability.md's format) with the checkpoint format", checkpointVersion, savepoint.Version)
	}
}
