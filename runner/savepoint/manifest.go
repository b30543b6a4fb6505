// Package savepoint is the format of a savepoint, a checkpoint of a
// running job written to a directory of its own that outlives the job
// and the server, and the decision whether a new pipeline can start
// from one. Pure apart from Read and Write; docs/durability.md
// ("Savepoints") describes the format for users.
package savepoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// A savepoint directory holds three files: ManifestFile (JSON, Manifest),
// CheckpointFile (the executor's checkpoint bytes, as a job's durable
// checkpoints are) and PipelineFile (the job's pipeline proto).
const (
	ManifestFile   = "MANIFEST.json"
	CheckpointFile = "checkpoint.bin"
	PipelineFile   = "pipeline.pb"
	// FormatName names the format in every manifest.
	FormatName = "beam-runner-savepoint"
	// Version is the format version this build writes and the newest it
	// reads. Bump it when a file or field changes meaning, including the
	// executor's checkpoint format that CheckpointFile holds: an older
	// server must refuse the savepoint by name at submission, not fail
	// the job it started. Version 2: the checkpoint may be the
	// executor's checkpoint format 2 (with the autoscaler's memory), and
	// the manifest lists the pipeline's transforms. Version 3: the
	// manifest's start_stage (the plan's fusion constraint) and its
	// grouping steps' windowing, which a version-2 reader would ignore,
	// planning the checkpoint onto stages it does not belong to.
	// Versions 1 and 2 are read (neither field is in them).
	Version = 3
)

// Manifest describes a savepoint.
type Manifest struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	JobID   string    `json:"job_id"`
	JobName string    `json:"job_name"`
	Created time.Time `json:"created"`
	// Sequence counts the checkpoints the job's run had taken, this one
	// included.
	Sequence uint64 `json:"sequence"`
	// PipelineSHA256 digests PipelineFile, CheckpointSHA256 CheckpointFile.
	PipelineSHA256   string `json:"pipeline_sha256"`
	CheckpointSHA256 string `json:"checkpoint_sha256"`
	Steps            []Step `json:"steps"`
	// Transforms names every transform of the pipeline, id to unique
	// name (from version 2), so that a shape's ids read as names.
	Transforms map[string]string `json:"transforms,omitempty"`
	// Shape is the executor's fused plan the checkpoint belongs to
	// (stages and materialised PCollections), which a new pipeline's
	// must match while the checkpoint cannot be remapped onto another.
	Shape []string `json:"shape"`
	// StartStage lists the transforms (by id) the job's plan was made to
	// start stages with (plan.Options.StartStage), as the job that
	// started from a savepoint kept its boundaries: the plan the
	// checkpoint belongs to is the pipeline's planned with them (from
	// version 3; older savepoints' plans had no such constraint).
	StartStage []string `json:"start_stage,omitempty"`
}

// Savepoint is a savepoint as read back.
type Savepoint struct {
	Manifest   Manifest
	Checkpoint []byte
	Pipeline   *pipepb.Pipeline
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// New describes a checkpoint of a job running pipeline p.
func New(jobID, jobName string, p *pipepb.Pipeline, checkpoint []byte, seq uint64, shape []string, now time.Time) (*Savepoint, error) {
	steps, err := Steps(p)
	if err != nil {
		return nil, err
	}
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the pipeline: %w", err)
	}
	m := Manifest{Format: FormatName, Version: Version, JobID: jobID, JobName: jobName, Created: now.UTC(),
		Sequence: seq, PipelineSHA256: digest(pb), CheckpointSHA256: digest(checkpoint), Steps: steps,
		Transforms: TransformNames(p), Shape: shape}
	return &Savepoint{Manifest: m, Checkpoint: checkpoint, Pipeline: p}, nil
}

// Write writes sp to dir, which must not exist yet or be empty: a
// savepoint is never overwritten. The files are written and synced in a
// directory beside dir, which is then renamed to dir, so dir holds a
// whole savepoint or none.
func Write(dir string, sp *Savepoint) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("savepoint directory %s exists and is not empty", dir)
	} else if err == nil {
		if err := os.Remove(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("savepoint directory %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".writing-")
	if err != nil {
		return fmt.Errorf("savepoint directory %s: %w", dir, err)
	}
	if err := writeFiles(tmp, sp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("writing savepoint %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("savepoint directory %s: %w", dir, err)
	}
	return syncDir(filepath.Dir(dir))
}

func writeFiles(dir string, sp *Savepoint) error {
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(sp.Pipeline)
	if err != nil {
		return err
	}
	mf, err := json.MarshalIndent(sp.Manifest, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{CheckpointFile, sp.Checkpoint}, {PipelineFile, pb}, {ManifestFile, append(mf, '\n')}} {
		if err := writeSynced(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Read reads the savepoint in dir, refusing one of another or a newer
// format, or whose files do not match their digests.
func Read(dir string) (*Savepoint, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("savepoint %s is not a directory", dir)
	}
	mf, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a savepoint: it has no %s", dir, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", dir, err)
	}
	m, err := ParseManifest(mf)
	if err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", dir, err)
	}
	sp := &Savepoint{Manifest: *m, Pipeline: &pipepb.Pipeline{}}
	pb, err := readDigested(dir, PipelineFile, m.PipelineSHA256)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(pb, sp.Pipeline); err != nil {
		return nil, fmt.Errorf("savepoint %s: %s: %w", dir, PipelineFile, err)
	}
	if sp.Checkpoint, err = readDigested(dir, CheckpointFile, m.CheckpointSHA256); err != nil {
		return nil, err
	}
	return sp, nil
}

func readDigested(dir, name, want string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", dir, err)
	}
	if got := digest(b); got != want {
		return nil, fmt.Errorf("savepoint %s: %s is damaged or was replaced: its SHA-256 is %s, the manifest says %s", dir, name, got, want)
	}
	return b, nil
}

// ParseManifest reads a manifest, refusing another format and a version
// newer than this build reads. Pure.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", ManifestFile, err)
	}
	switch {
	case m.Format != FormatName:
		return nil, fmt.Errorf("%s names format %q, not %q", ManifestFile, m.Format, FormatName)
	case m.Version > Version:
		return nil, fmt.Errorf("savepoint format %s version %d is newer than this beam-runner reads (version %d at most): start it on a newer beam-runner", FormatName, m.Version, Version)
	case m.Version < 1:
		return nil, fmt.Errorf("savepoint format %s version %d is not a version", FormatName, m.Version)
	}
	return &m, nil
}

// TransformNames maps each transform of p, by id, to its unique name.
func TransformNames(p *pipepb.Pipeline) map[string]string {
	out := map[string]string{}
	for id, t := range p.GetComponents().GetTransforms() {
		out[id] = t.GetUniqueName()
	}
	return out
}
