package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Artifact type and role URNs (standard_artifacts.proto).
const (
	TypeFile      = "beam:artifact:type:file:v1"
	TypeEmbedded  = "beam:artifact:type:embedded:v1"
	RoleStagingTo = "beam:artifact:role:staging_to:v1"
)

// writer stores fetched artifacts under dir, once per distinct artifact.
type writer struct {
	dir  string
	done map[string]*pipepb.ArtifactInformation // by file name
}

// stage fetches dep from the client into a file and returns the file-typed
// replacement, keeping dep's role so SDKs still know what it is for.
func (w *writer) stage(p *peer, dep *pipepb.ArtifactInformation) (*pipepb.ArtifactInformation, error) {
	name := fileName(dep)
	if d, ok := w.done[name]; ok {
		return d, nil // the same artifact in another environment
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(w.dir, name)
	sum, err := fetchTo(p, dep, path)
	if err != nil {
		return nil, fmt.Errorf("staging artifact %v: %w", describe(dep), err)
	}
	staged := &pipepb.ArtifactInformation{
		TypeUrn:     TypeFile,
		TypePayload: mustMarshal(&pipepb.ArtifactFilePayload{Path: path, Sha256: sum}),
		RoleUrn:     dep.GetRoleUrn(),
		RolePayload: dep.GetRolePayload(),
	}
	w.done[name] = staged
	return staged, nil
}

func fetchTo(p *peer, dep *pipepb.ArtifactInformation, path string) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	err = p.get(dep, func(b []byte) error { return writeBoth(f, h, b) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeBoth(f *os.File, h hash.Hash, b []byte) error {
	h.Write(b)
	_, err := f.Write(b)
	return err
}

// fileName is unique per artifact (a hash of its description) and keeps the
// staged name's base for readability and for SDKs that look at extensions.
// Only the base is used: a client-chosen name must not escape the directory.
func fileName(dep *pipepb.ArtifactInformation) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(dep)
	sum := sha256.Sum256(b)
	name := hex.EncodeToString(sum[:16])
	if base := stagedBase(dep); base != "" {
		name += "-" + base
	}
	return name
}

func stagedBase(dep *pipepb.ArtifactInformation) string {
	if dep.GetRoleUrn() != RoleStagingTo {
		return ""
	}
	var rp pipepb.ArtifactStagingToRolePayload
	if proto.Unmarshal(dep.GetRolePayload(), &rp) != nil {
		return ""
	}
	base := filepath.Base(filepath.Clean("/" + rp.GetStagedName()))
	if base == "/" || base == "." || strings.ContainsAny(base, `/\`) {
		return ""
	}
	return base
}

func describe(dep *pipepb.ArtifactInformation) string {
	if base := stagedBase(dep); base != "" {
		return fmt.Sprintf("%q (type %s)", base, dep.GetTypeUrn())
	}
	return fmt.Sprintf("of type %s, role %s", dep.GetTypeUrn(), dep.GetRoleUrn())
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err) // only for messages built here, which always marshal
	}
	return b
}
