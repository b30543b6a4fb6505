package worker

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func dockerEnv(image string) *pipepb.Environment {
	pl, _ := proto.Marshal(&pipepb.DockerPayload{ContainerImage: image})
	return &pipepb.Environment{Urn: URNDocker, Payload: pl}
}

func externalEnv(addr string) *pipepb.Environment {
	pl, _ := proto.Marshal(&pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: addr}})
	return &pipepb.Environment{Urn: URNExternal, Payload: pl}
}

func processEnv(cmd string) *pipepb.Environment {
	pl, _ := proto.Marshal(&pipepb.ProcessPayload{Command: cmd})
	return &pipepb.Environment{Urn: URNProcess, Payload: pl}
}

func anyOf(alts ...*pipepb.Environment) *pipepb.Environment {
	pl, _ := proto.Marshal(&pipepb.AnyOfEnvironmentPayload{Environments: alts})
	return &pipepb.Environment{Urn: URNAnyOf, Payload: pl}
}

// deferredDeps gives env a dependency that staging left deferred.
func deferredDeps(env *pipepb.Environment) *pipepb.Environment {
	env.Dependencies = []*pipepb.ArtifactInformation{{TypeUrn: urnArtifactDeferred}}
	return env
}

var noDocker = func(context.Context) error { return errors.New("no Docker daemon answers (test)") }

// An anyof environment runs a serving EXTERNAL pool before a PROCESS
// command, a PROCESS command before DOCKER, and skips what cannot start.
func TestResolveAnyOfRanksAlternatives(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	l := NewLauncher(Config{Docker: noDocker}, Job{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		env  *pipepb.Environment
		want string // describeEnv of the choice; "" for an error
	}{
		{"serving pool first", anyOf(dockerEnv("apache/beam_python3.11_sdk:2.77.0"), processEnv("/bin/sh"), externalEnv(lis.Addr().String())), "EXTERNAL worker pool " + lis.Addr().String()},
		{"dead pool skipped", anyOf(externalEnv(deadAddr), dockerEnv("apache/beam_python3.11_sdk:2.77.0"), processEnv("/bin/sh")), "PROCESS /bin/sh"},
		{"missing command skipped", anyOf(processEnv("/no/such/boot"), dockerEnv("apache/beam_go_sdk:2.77.0")), "DOCKER apache/beam_go_sdk:2.77.0"},
		{"nested anyof", anyOf(anyOf(dockerEnv("example.com/my/sdk:1"), processEnv("/bin/sh"))), "PROCESS /bin/sh"},
		{"java image runs here", anyOf(externalEnv(deadAddr), dockerEnv("apache/beam_java17_sdk:2.73.0")), "DOCKER apache/beam_java17_sdk:2.73.0"},
		{"nothing startable", anyOf(externalEnv(deadAddr), dockerEnv("example.com/my/sdk:1")), ""},
		{"unstaged artifacts skipped", anyOf(deferredDeps(dockerEnv("apache/beam_java17_sdk:2.73.0")), processEnv("/bin/sh")), "PROCESS /bin/sh"},
		{"only unstaged artifacts", anyOf(externalEnv(deadAddr), deferredDeps(dockerEnv("apache/beam_java17_sdk:2.73.0"))), ""},
		{"empty", anyOf(), ""},
	} {
		got, note, err := l.Resolve(ctx, "e1", tc.env)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), `environment "e1" (anyof)`) {
				t.Errorf("%s: got %v, %v; want an error naming the environment", tc.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d := describeEnv(got); d != tc.want || !strings.Contains(note, tc.want) {
			t.Errorf("%s: chose %q (note %q), want %q", tc.name, d, note, tc.want)
		}
	}
	// Not anyof: returned as is.
	env := processEnv("/bin/sh")
	if got, note, err := l.Resolve(ctx, "e", env); got != env || note != "" || err != nil {
		t.Errorf("plain environment: %v %q %v", got, note, err)
	}
}

// An alternative whose payload does not parse is passed over, and the
// note says why rather than describing it as empty.
func TestResolveReportsBadPayloads(t *testing.T) {
	l := NewLauncher(Config{Docker: noDocker}, Job{})
	bad := &pipepb.Environment{Urn: URNProcess, Payload: []byte{0xff}}
	got, note, err := l.Resolve(context.Background(), "e", anyOf(bad, processEnv("/bin/sh")))
	if err != nil || describeEnv(got) != "PROCESS /bin/sh" {
		t.Fatalf("chose %v, %v", got, err)
	}
	if !strings.Contains(note, "PROCESS environment: bad payload") {
		t.Errorf("note %q does not report the bad payload", note)
	}
	if d := describeEnv(bad); !strings.Contains(d, "bad payload") {
		t.Errorf("describeEnv = %q", d)
	}
}

// Without Docker, an image other than Beam's SDK images fails at once,
// naming the image.
func TestForeignImageWithoutDockerFails(t *testing.T) {
	l := NewLauncher(Config{Docker: noDocker}, Job{WorkDir: t.TempDir()})
	_, err := l.Start(context.Background(), "custom", dockerEnv("example.com/my/sdk:1"), "w", Endpoints{})
	if err == nil || !strings.Contains(err.Error(), `"example.com/my/sdk:1" needs Docker`) || !strings.Contains(err.Error(), "no Docker daemon answers") {
		t.Fatalf("err = %v", err)
	}
}

// fakePython writes an interpreter that reports the given versions.
func fakePython(t *testing.T, dir, name, py, beam string) string {
	path := filepath.Join(dir, name)
	script := "#!/bin/sh\necho " + py + "\necho " + path + "\necho " + beam + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The interpreter must have the image's Beam version; the error names
// both versions and the interpreter.
func TestPythonVersionMismatch(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	fakePython(t, dir, "python3", "3.11", "2.76.0")
	l := NewLauncher(Config{Docker: noDocker}, Job{})
	py311 := sdkenv.Image{SDK: sdkenv.Python, Variant: "3.11", Version: "2.77.0"}
	_, err := pyOf(l).python(context.Background(), py311)
	if err == nil || !strings.Contains(err.Error(), "2.77.0") || !strings.Contains(err.Error(), "apache-beam 2.76.0") || !strings.Contains(err.Error(), filepath.Join(dir, "python3")) {
		t.Fatalf("err = %v", err)
	}
	fakePython(t, dir, "python3.11", "3.11", "2.77.0")
	info, err := pyOf(l).python(context.Background(), py311)
	if err != nil || info.path != filepath.Join(dir, "python3.11") || info.exe != info.path {
		t.Fatalf("python3.11 with the right Beam: %+v, %v", info, err)
	}
	named := fakePython(t, t.TempDir(), "py", "3.12", "2.70.0")
	l = NewLauncher(Config{Docker: noDocker, Python: PythonConfig{Interpreter: named}}, Job{})
	if _, err := pyOf(l).python(context.Background(), py311); err == nil || !strings.Contains(err.Error(), "--sdk_python") || !strings.Contains(err.Error(), "2.70.0") {
		t.Fatalf("--sdk_python with the wrong Beam: %v", err)
	}
}

type mapOpener map[string]string // file path -> content

func (m mapOpener) Open(a *pipepb.ArtifactInformation) (io.ReadCloser, error) {
	var pl pipepb.ArtifactFilePayload
	proto.Unmarshal(a.GetTypePayload(), &pl)
	c, ok := m[pl.GetPath()]
	if !ok {
		return nil, os.ErrNotExist
	}
	return io.NopCloser(strings.NewReader(c)), nil
}

func fileDep(path, stagedAs, role string) *pipepb.ArtifactInformation {
	tp, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: path})
	a := &pipepb.ArtifactInformation{TypeUrn: "beam:artifact:type:file:v1", TypePayload: tp, RoleUrn: role}
	if stagedAs != "" {
		a.RoleUrn = roleStagingTo
		a.RolePayload, _ = proto.Marshal(&pipepb.ArtifactStagingToRolePayload{StagedName: stagedAs})
	}
	return a
}

// Staged files land under the names the SDK expects; names that would
// leave the staged directory are refused.
func TestMaterializeNames(t *testing.T) {
	dir := t.TempDir()
	l := NewLauncher(Config{}, Job{Artifacts: mapOpener{"/s/abc": "reqs", "/s/bin": "elf"}})
	files, err := l.materialize([]*pipepb.ArtifactInformation{
		fileDep("/s/abc", "requirements.txt", ""), fileDep("/s/bin", "", roleGoWorker),
	}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].name != "requirements.txt" || files[1].name != "bin" || files[1].role != roleGoWorker {
		t.Fatalf("files = %+v", files)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "requirements.txt")); string(b) != "reqs" {
		t.Errorf("requirements.txt = %q", b)
	}
	for _, bad := range []string{"../evil", "a/b", ".."} {
		if _, err := l.materialize([]*pipepb.ArtifactInformation{fileDep("/s/abc", bad, "")}, dir); err == nil {
			t.Errorf("staged name %q accepted", bad)
		}
	}
	if _, err := l.materialize([]*pipepb.ArtifactInformation{fileDep("/s/abc", "x", ""), fileDep("/s/bin", "x", "")}, dir); err == nil {
		t.Error("two artifacts staged under one name accepted")
	}
}

// The install plan follows the boot: requirements first from the staged
// packages alone, extra packages one by one, then the workflow; a main
// session alone needs no virtualenv.
func TestPlanInstalls(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, pyExtraList), []byte("pkg-1.0.tar.gz\n\nother.whl\n"), 0o644)
	files := []stagedFile{
		{name: pyMainSession, path: filepath.Join(dir, pyMainSession)},
		{name: pyRequirements, path: filepath.Join(dir, pyRequirements)},
		{name: pyExtraList, path: filepath.Join(dir, pyExtraList)},
		{name: pyWorkflow, path: filepath.Join(dir, pyWorkflow)},
	}
	p := planInstalls(files, dir, false)
	var got []string
	for _, s := range p.steps {
		got = append(got, strings.Join(s.args[3:], " "))
	}
	want := []string{
		"--no-cache-dir --disable-pip-version-check --no-build-isolation -r " + filepath.Join(dir, pyRequirements) + " --no-index --no-deps --find-links " + dir,
		"--no-cache-dir --disable-pip-version-check --no-build-isolation " + filepath.Join(dir, "pkg-1.0.tar.gz"),
		"--no-cache-dir --disable-pip-version-check --no-build-isolation " + filepath.Join(dir, "other.whl"),
		"--no-cache-dir --disable-pip-version-check --no-build-isolation " + filepath.Join(dir, pyWorkflow),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.steps[0].fallback == nil {
		t.Error("requirements have no fallback to the package index")
	}
	for _, f := range p.files {
		if f.name == pyMainSession {
			t.Error("the main session is part of the virtualenv's key")
		}
	}
	data := stagedFile{name: "sklearn_model", path: filepath.Join(dir, "sklearn_model")}
	if p := planInstalls(append(files, data), dir, false); len(p.files) != len(files)-1 {
		t.Errorf("a data file is part of the virtualenv's key: %+v", p.files)
	}
	if p := planInstalls(files[:1], dir, false); len(p.steps) != 0 {
		t.Errorf("main session alone: %d steps", len(p.steps))
	}
	opts, _ := structpb.NewStruct(map[string]any{"beam:option:experiments:v1": []any{"pip_use_build_isolation"}})
	if p := planInstalls(files[1:2], dir, buildIsolation(opts)); strings.Contains(strings.Join(p.steps[0].args, " "), "--no-build-isolation") {
		t.Error("pip_use_build_isolation ignored")
	}
}

// A virtualenv's key follows the content of what it installs.
func TestVenvKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	req := filepath.Join(dir, pyRequirements)
	os.WriteFile(req, []byte("six==1.16.0\n"), 0o644)
	plan := planInstalls([]stagedFile{{name: pyRequirements, path: req}}, dir, false)
	py := pyInfo{path: "/usr/bin/python3", version: "3.11", beam: "2.77.0"}
	k1, err := venvKey(py, plan)
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := venvKey(py, plan); k2 != k1 {
		t.Error("same content, different keys")
	}
	os.WriteFile(req, []byte("six==1.17.0\n"), 0o644)
	if k3, _ := venvKey(py, plan); k3 == k1 {
		t.Error("different requirements, same key")
	}
	py.beam = "2.78.0"
	if k4, _ := venvKey(py, plan); k4 == k1 {
		t.Error("different Beam, same key")
	}
}

func TestGoWorkerBinary(t *testing.T) {
	bin := stagedFile{name: "abc", role: roleGoWorker}
	if f, err := goWorkerBinary([]stagedFile{{name: "x"}, bin}); err != nil || f != bin {
		t.Errorf("by role: %+v %v", f, err)
	}
	if f, err := goWorkerBinary([]stagedFile{{name: "x"}, {name: "worker"}}); err != nil || f.name != "worker" {
		t.Errorf("by name: %+v %v", f, err)
	}
	if _, err := goWorkerBinary([]stagedFile{{name: "x"}, {name: "y"}}); err == nil {
		t.Error("no worker binary accepted")
	}
	if _, err := goWorkerBinary(nil); err == nil {
		t.Error("no artifacts accepted")
	}
}

// pyOf and javaOf are a launcher's Python and Java runtimes.
func pyOf(l *Launcher) *pyRuntime     { return l.runtimes[sdkenv.Python].(*pyRuntime) }
func javaOf(l *Launcher) *javaRuntime { return l.runtimes[sdkenv.Java].(*javaRuntime) }
