package savepoint_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/savepoint"
	"google.golang.org/protobuf/proto"
)

func newSavepoint(t *testing.T) *savepoint.Savepoint {
	t.Helper()
	sp, err := savepoint.New("job-1", "counting", countingProto(t, t0, false), []byte("checkpoint bytes"), 7, []string{"stage a"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestWriteThenReadGivesTheSavepointBack(t *testing.T) {
	sp := newSavepoint(t)
	dir := filepath.Join(t.TempDir(), "sp")
	if err := savepoint.Write(dir, sp); err != nil {
		t.Fatal(err)
	}
	got, err := savepoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Checkpoint, sp.Checkpoint) || !proto.Equal(got.Pipeline, sp.Pipeline) {
		t.Error("the savepoint read back differs in its checkpoint or pipeline")
	}
	m := got.Manifest
	if m.Format != savepoint.FormatName || m.Version != savepoint.Version || m.JobID != "job-1" || m.JobName != "counting" ||
		m.Sequence != 7 || len(m.Steps) != 2 || len(m.Shape) != 1 || !m.Created.Equal(t0) {
		t.Errorf("manifest read back: %+v", m)
	}
	if err := savepoint.Write(dir, sp); err == nil || !strings.Contains(err.Error(), "exists and is not empty") {
		t.Errorf("a second savepoint into the same directory: %v, want it refused", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	if len(ents) != 1 {
		t.Errorf("the savepoints' parent holds %d entries, want the savepoint alone (no leftover temporary directory)", len(ents))
	}
}

func TestReadRefusesADamagedCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sp")
	if err := savepoint.Write(dir, newSavepoint(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, savepoint.CheckpointFile), []byte("checkpoint bytez"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := savepoint.Read(dir)
	if err == nil || !strings.Contains(err.Error(), "checkpoint.bin is damaged or was replaced") {
		t.Errorf("Read of a damaged checkpoint: %v", err)
	}
	if _, err := savepoint.Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a savepoint: it has no MANIFEST.json") {
		t.Errorf("Read of an empty directory: %v", err)
	}
}

// A savepoint of a newer format is refused by its format's name and
// version, before anything else of it is read.
func TestANewerFormatVersionIsRefusedByName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sp")
	if err := savepoint.Write(dir, newSavepoint(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, savepoint.ManifestFile)
	var m map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = savepoint.Version + 1
	m["a_field_of_the_future"] = true
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = savepoint.Read(dir)
	want := fmt.Sprintf("savepoint format beam-runner-savepoint version %d is newer than this beam-runner reads (version %d at most)", savepoint.Version+1, savepoint.Version)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read of a newer version: %v, want %q", err, want)
	}
	if _, err := savepoint.ParseManifest([]byte(`{"format":"flink-savepoint","version":1}`)); err == nil || !strings.Contains(err.Error(), `names format "flink-savepoint"`) {
		t.Errorf("ParseManifest of another format: %v", err)
	}
}

// A missing, non-directory or garbled savepoint is refused by an error
// naming its path, never read as an empty one.
func TestReadNamesTheDamagedPath(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbled := filepath.Join(root, "garbled")
	if err := savepoint.Write(garbled, newSavepoint(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbled, savepoint.ManifestFile), []byte(`{"format": "beam-runner-sav`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{missing, "savepoint " + missing + ": stat " + missing + ": no such file or directory"},
		{file, "savepoint " + file + " is not a directory"},
		{garbled, "savepoint " + garbled + ": MANIFEST.json does not parse"},
	} {
		if _, err := savepoint.Read(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%s): %v, want %q", c.dir, err, c.want)
		}
	}
}

// A version 1 manifest (no transforms) is still read; this build writes
// its own version, with every transform's unique name.
func TestVersionOneIsReadAndTransformsAreListed(t *testing.T) {
	sp := newSavepoint(t)
	if sp.Manifest.Version != savepoint.Version || len(sp.Manifest.Transforms) != len(sp.Pipeline.GetComponents().GetTransforms()) {
		t.Errorf("a new manifest: version %d, %d transforms; want %d and the pipeline's %d", sp.Manifest.Version,
			len(sp.Manifest.Transforms), savepoint.Version, len(sp.Pipeline.GetComponents().GetTransforms()))
	}
	for id, name := range sp.Manifest.Transforms {
		if got := sp.Pipeline.GetComponents().GetTransforms()[id].GetUniqueName(); got != name {
			t.Errorf("transform %s named %q, the pipeline says %q", id, name, got)
		}
	}
	m, err := savepoint.ParseManifest([]byte(`{"format":"beam-runner-savepoint","version":1,"job_id":"j","steps":[],"shape":["stage s0 (kind 1): e1"]}`))
	if err != nil || m.Version != 1 || m.Transforms != nil || len(m.Shape) != 1 {
		t.Errorf("a version 1 manifest: %+v, %v", m, err)
	}
}

// A version 2 manifest (no start_stage, no grouping step's windowing) is
// still read, and its grouping steps' windowing is not compared, since
// it was never recorded; this build's grouping steps record theirs.
func TestVersionTwoIsReadWithoutWindowing(t *testing.T) {
	m, err := savepoint.ParseManifest([]byte(`{"format":"beam-runner-savepoint","version":2,"job_id":"j",` +
		`"steps":[{"name":"g","kind":"grouping"}],"transforms":{"e1":"g"},"shape":["stage s0 (kind 1): e1"]}`))
	if err != nil || m.Version != 2 || m.StartStage != nil || len(m.Steps) != 1 || m.Steps[0].Windowing != "" {
		t.Fatalf("a version 2 manifest: %+v, %v", m, err)
	}
	now := []savepoint.Step{{Name: "g", Kind: savepoint.Grouping, Windowing: "fixed(2s)"}}
	if err := savepoint.Check(m.Steps, now, nil); err != nil {
		t.Errorf("a version 2 grouping step against one with windowing: %v, want it accepted", err)
	}
	var windowed int
	for _, s := range newSavepoint(t).Manifest.Steps {
		if s.Kind == savepoint.Grouping && s.Windowing != "" {
			windowed++
		}
	}
	if windowed == 0 {
		t.Errorf("a new manifest's grouping steps record no windowing: %+v", newSavepoint(t).Manifest.Steps)
	}
}
