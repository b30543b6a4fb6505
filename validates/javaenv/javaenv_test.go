// Package javaenv runs a Java pipeline submitted with Java's default
// environment, Beam's Java SDK image, on a job server without Docker: the
// server runs the image's FnHarness as local JVMs. The pipeline is
// testdata/JavaEnvPipeline.java, compiled against Beam's Java SDK 2.73.0
// (scripts/setup.sh resolves it, and the harness, into the local Maven
// repository), which translates itself as Beam's PortableRunner would;
// the test submits it through the Job API, staging its classpath.
package javaenv

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/worker"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

const jobLimit = 4 * time.Minute

// buildDir holds the compiled pipeline and its jar, which every job
// stages: it lives as long as the test binary.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "javaenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "javaenv:", err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pipeline is the translated Java pipeline, built once per test binary.
var pipeline struct {
	once sync.Once
	p    *pipepb.Pipeline
	opts *structpb.Struct
	err  error
}

func javaPipeline(t *testing.T) (*pipepb.Pipeline, *structpb.Struct) {
	t.Helper()
	pipeline.once.Do(func() {
		pipeline.p, pipeline.opts, pipeline.err = buildPipeline(buildDir)
	})
	if pipeline.err != nil {
		t.Fatalf("building the Java pipeline (scripts/setup.sh resolves what it needs): %v", pipeline.err)
	}
	return proto.Clone(pipeline.p).(*pipepb.Pipeline), pipeline.opts
}

// buildPipeline compiles JavaEnvPipeline against the classpath Maven
// resolves offline for testdata/pom.xml, and runs it to write the protos.
func buildPipeline(dir string) (*pipepb.Pipeline, *structpb.Struct, error) {
	src, err := filepath.Abs("testdata")
	if err != nil {
		return nil, nil, err
	}
	cpFile := filepath.Join(dir, "classpath.txt")
	steps := [][]string{
		{"mvn", "-o", "-B", "-q", "-f", filepath.Join(src, "pom.xml"), "dependency:build-classpath", "-Dmdep.outputFile=" + cpFile},
		{"javac", "-nowarn", "-d", filepath.Join(dir, "classes"), "-cp", "@CP", filepath.Join(src, "JavaEnvPipeline.java")},
		{"jar", "cf", filepath.Join(dir, "pipeline.jar"), "-C", filepath.Join(dir, "classes"), "."},
		{"java", "-cp", filepath.Join(dir, "pipeline.jar") + ":@CP", "JavaEnvPipeline", dir},
	}
	for _, step := range steps {
		if step[0] != "mvn" {
			cp, err := os.ReadFile(cpFile)
			if err != nil {
				return nil, nil, err
			}
			for i, a := range step {
				step[i] = strings.ReplaceAll(a, "@CP", strings.TrimSpace(string(cp)))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := exec.CommandContext(ctx, step[0], step[1:]...).CombinedOutput()
		cancel()
		if err != nil {
			return nil, nil, &stepError{step[0], err, string(out)}
		}
	}
	var p pipepb.Pipeline
	var opts structpb.Struct
	if err := readProto(filepath.Join(dir, "pipeline.pb"), &p); err != nil {
		return nil, nil, err
	}
	return &p, &opts, readProto(filepath.Join(dir, "options.pb"), &opts)
}

type stepError struct {
	prog string
	err  error
	out  string
}

func (e *stepError) Error() string {
	out := e.out
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return e.prog + ": " + e.err.Error() + "\n" + out
}

func readProto(path string, m proto.Message) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// javaEnv is the pipeline's one environment, which must be Java's
// default: DOCKER with Beam's Java SDK image.
func javaEnv(t *testing.T, p *pipepb.Pipeline) (string, *pipepb.Environment) {
	t.Helper()
	for id, env := range p.GetComponents().GetEnvironments() {
		e, err := sdkenv.Parse(env)
		if err != nil || e.Kind != sdkenv.Docker {
			t.Fatalf("environment %s is %s (%v), want Java's default DOCKER environment", id, env.GetUrn(), err)
		}
		img, ok := sdkenv.ParseImage(e.Image)
		if !ok || img.SDK != sdkenv.Java || img.Version != "2.73.0" {
			t.Fatalf("environment %s has image %q, want Beam's Java SDK image 2.73.0", id, e.Image)
		}
		return id, env
	}
	t.Fatal("the pipeline has no environment")
	return "", nil
}

// serve runs a job server whose Beam SDK images run as local workers.
func serve(t *testing.T, cfg worker.Config) jobpb.JobServiceClient {
	cfg.Containers = worker.ContainersLocal
	if cfg.Java.CacheDir == "" {
		cfg.Java.CacheDir = t.TempDir()
	}
	addr, _ := jobtest.Serve(t, server.Config{
		Executor:     execute.New(execute.Options{Workers: workers.Options{Environments: cfg, StartTimeout: 2 * time.Minute}}),
		ArtifactRoot: t.TempDir(),
	})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return jobpb.NewJobServiceClient(conn)
}

// outcome is how a job ended and what it said.
type outcome struct {
	id       string
	state    jobpb.JobState_Enum
	messages []string
}

// run submits p as Beam's PortableRunner does (Prepare, stage the
// environment's files, Run) and follows it to its end.
func run(t *testing.T, client jobpb.JobServiceClient, p *pipepb.Pipeline, opts *structpb.Struct) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobLimit)
	defer cancel()
	o := outcome{id: jobtest.SubmitStaged(t, ctx, client, p, opts, "javaenv")}
	stream, err := client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: o.id})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			break
		}
		if s := m.GetStateResponse(); s != nil {
			o.state = s.GetState()
		}
		if msg := m.GetMessageResponse(); msg != nil {
			o.messages = append(o.messages, msg.GetMessageText())
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("job %s still %v after %v; messages:\n%s", o.id, o.state, jobLimit, strings.Join(o.messages, "\n"))
	}
	return o
}

func (o outcome) said(s string) bool {
	for _, m := range o.messages {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// passertCounts sums the job's PAssert success and failure counters.
func passertCounts(t *testing.T, client jobpb.JobServiceClient, id string) (ok, failed int64) {
	t.Helper()
	resp, err := client.GetJobMetrics(context.Background(), &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		if mi.GetUrn() != "beam:metric:user:sum_int64:v1" || mi.GetLabels()["NAMESPACE"] != "org.apache.beam.sdk.testing.PAssert" {
			continue
		}
		// Beam's varint coder: the int64's bits as an unsigned varint.
		u, n := binary.Uvarint(mi.GetPayload())
		if n <= 0 {
			t.Fatalf("PAssert counter payload %x", mi.GetPayload())
		}
		v := int64(u)
		switch mi.GetLabels()["NAME"] {
		case "PAssertSuccess":
			ok += v
		case "PAssertFailure":
			failed += v
		}
	}
	return ok, failed
}

// checkPassed requires the job DONE with both PAsserts verified.
func checkPassed(t *testing.T, client jobpb.JobServiceClient, o outcome) {
	t.Helper()
	if o.state != jobpb.JobState_DONE {
		t.Fatalf("job %s ended %v; messages:\n%s", o.id, o.state, strings.Join(o.messages, "\n"))
	}
	if ok, failed := passertCounts(t, client, o.id); ok < 2 || failed != 0 {
		t.Errorf("PAssert: %d successes, %d failures; want both assertions to succeed", ok, failed)
	}
}

// Java's default environment runs as local JVMs on the harness in the
// local Maven repository, and the job's messages say so.
func TestJavaDefaultEnvironment(t *testing.T) {
	t.Parallel() // each on a server of its own; mostly waiting on JVMs
	p, opts := javaPipeline(t)
	javaEnv(t, p)
	before := listDir(t, ".")
	client := serve(t, worker.Config{})
	o := run(t, client, p, opts)
	checkPassed(t, client, o)
	// The workers run in the server's working directory (here), and keep
	// what is theirs elsewhere.
	if after := listDir(t, "."); after != before {
		t.Errorf("the workers left files in the working directory: before %s, after %s", before, after)
	}
	for _, want := range []string{"runs as local SDK worker processes (--sdk_containers=local)",
		"org.apache.beam.fn.harness.FnHarness of Beam's Java harness 2.73.0 from the local Maven repository"} {
		if !o.said(want) {
			t.Errorf("no job message says %q:\n%s", want, strings.Join(o.messages, "\n"))
		}
	}
}

// Without the harness in the Maven repository it names, the server
// fetches it with mvn into its cache and runs the job on it.
func TestJavaHarnessFetched(t *testing.T) {
	t.Parallel() // each on a server of its own; mostly waiting on JVMs
	p, opts := javaPipeline(t)
	client := serve(t, worker.Config{Java: worker.JavaConfig{MavenRepo: t.TempDir()}})
	o := run(t, client, p, opts)
	checkPassed(t, client, o)
	if !o.said("fetching Beam's Java harness 2.73.0 with mvn") || !o.said("(fetched with mvn)") {
		t.Errorf("no job message tells of the fetch:\n%s", strings.Join(o.messages, "\n"))
	}
}

// An image of a Beam version the registry does not serve (2.77.0 here)
// fails the job at start, naming the version and the flag that helps.
func TestJavaHarnessNotServed(t *testing.T) {
	t.Parallel() // each on a server of its own; mostly waiting on JVMs
	p, opts := javaPipeline(t)
	id, env := javaEnv(t, p)
	pl, _ := proto.Marshal(&pipepb.DockerPayload{ContainerImage: "apache/beam_java17_sdk:2.77.0"})
	env.Payload = pl
	p.GetComponents().GetEnvironments()[id] = env
	client := serve(t, worker.Config{Java: worker.JavaConfig{MavenRepo: t.TempDir()}})
	o := run(t, client, p, opts)
	if o.state != jobpb.JobState_FAILED {
		t.Fatalf("job ended %v, want FAILED", o.state)
	}
	if !o.said("no Beam Java harness 2.77.0") || !o.said("--sdk_java_classpath") || !o.said("beam-sdks-java-harness:pom:2.77.0") {
		t.Errorf("no job message names the version, the artifact and the flag:\n%s", strings.Join(o.messages, "\n"))
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// A Java PROCESS environment whose command is the image's boot, which
// this machine does not have, runs the same local JVMs.
func TestJavaProcessEnvironment(t *testing.T) {
	t.Parallel() // each on a server of its own; mostly waiting on JVMs
	p, opts := javaPipeline(t)
	id, env := javaEnv(t, p)
	if _, err := os.Stat("/opt/apache/beam/boot"); err == nil {
		t.Fatal("/opt/apache/beam/boot exists here: the environment would run it")
	}
	pl, _ := proto.Marshal(&pipepb.ProcessPayload{Command: "/opt/apache/beam/boot"})
	env.Urn, env.Payload = worker.URNProcess, pl
	p.GetComponents().GetEnvironments()[id] = env
	client := serve(t, worker.Config{})
	o := run(t, client, p, opts)
	checkPassed(t, client, o)
	if !o.said("a PROCESS environment whose boot command /opt/apache/beam/boot is not here runs as local SDK worker processes") {
		t.Errorf("no job message says what runs:\n%s", strings.Join(o.messages, "\n"))
	}
}
