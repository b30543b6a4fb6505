//go:build xlang

package xlang

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// repoRoot is the module root: the test runs in validates/xlang.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// javaLib is a classpath of the jars setup resolved into
// .work/java/NAME/lib.
func javaLib(t *testing.T, name string) string {
	dir := filepath.Join(repoRoot(t), ".work", "java", name, "lib")
	jars, _ := filepath.Glob(filepath.Join(dir, "*.jar"))
	if len(jars) == 0 {
		t.Fatalf("no jars in %s: run scripts/setup.sh", dir)
	}
	return filepath.Join(dir, "*")
}

// logDir keeps the servers' logs: XLANG_LOGDIR, else the test's temp dir.
func logDir(t *testing.T) string {
	if d := os.Getenv("XLANG_LOGDIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// daemon starts a long-running child in a process group of its own, its
// output in logPath, and waits until addr accepts connections; cleanup ends
// the group.
func daemon(t *testing.T, logPath, addr string, limit time.Duration, name string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := serverproc.GroupCommand(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	err = testwait.For(ctx, limit, func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("%s exited before listening on %s", name, addr)
		default:
		}
		return serverproc.Listening(ctx, addr) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not listening on %s: log %s ends:\n%s\n%v", name, addr, logPath, testkit.TailFile(logPath, 30), err)
	}
}

func freeAddr(t *testing.T) (string, int) {
	port, err := serverproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "localhost:" + strconv.Itoa(port), port
}

// startBroker formats a fresh KRaft log directory and starts a single
// Kafka node (broker and controller) on free ports, its log NAME.log; it
// returns the bootstrap address.
func startBroker(t *testing.T, name string) string {
	t.Helper()
	cp := javaLib(t, "kafka")
	dir := t.TempDir()
	boot, bport := freeAddr(t)
	_, cport := freeAddr(t)
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(brokerProps(bport, cport, filepath.Join(dir, "data"))), 0o644); err != nil {
		t.Fatal(err)
	}
	log4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(brokerLog4j), 0o644); err != nil {
		t.Fatal(err)
	}
	jvm := []string{"-Xmx512m", "-Dlog4j.configuration=file:" + log4j, "-cp", cp}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	format := exec.CommandContext(ctx, "java", append(jvm, "kafka.tools.StorageTool", "format",
		"-t", clusterID(), "-c", props)...)
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("formatting the broker's storage: %v\n%s", err, out)
	}
	daemon(t, filepath.Join(logDir(t), name+".log"), boot, 2*time.Minute, "java", append(jvm, "kafka.Kafka", props)...)
	return boot
}

func brokerProps(bport, cport int, data string) string {
	return fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:%[2]d
listeners=PLAINTEXT://localhost:%[1]d,CONTROLLER://localhost:%[2]d
advertised.listeners=PLAINTEXT://localhost:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=2
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
`, bport, cport, data)
}

const brokerLog4j = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
`

// clusterID is a KRaft cluster id: 16 random bytes, base64url unpadded,
// and, as Kafka's own Uuid.randomUuid makes them, never starting with '-'
// (kafka-storage would read one as an option: one broker start in 64
// failed so).
func clusterID() string {
	b := make([]byte, 16)
	for {
		rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

// startExpansion starts the Java expansion service on a free port with
// the given options and returns its address.
func startExpansion(t *testing.T, name string, opts ...string) string {
	t.Helper()
	addr, port := freeAddr(t)
	args := append([]string{"-cp", javaLib(t, "expansion"), "org.apache.beam.sdk.expansion.service.ExpansionService", strconv.Itoa(port)}, opts...)
	daemon(t, filepath.Join(logDir(t), "expansion-"+name+".log"), addr, 2*time.Minute, "java", args...)
	return addr
}

// runnerServer is the beam-runner binary, started on a free port.
type runnerServer struct {
	bin, endpoint string
}

func startRunner(t *testing.T) runnerServer {
	t.Helper()
	bin := runnerBin(t)
	p, err := serverproc.Start(context.Background(), serverproc.Spec{
		Bin:  bin,
		Args: []string{"--state_dir=none", "--serve_http=false", "--log_kind=text"}, PortFlag: "--job_port",
		LogPath: filepath.Join(logDir(t), "beam-runner.log"), Grace: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return runnerServer{bin: bin, endpoint: p.Addr}
}

// runnerBin is $BEAM_RUNNER_BIN, else the server built into the test's
// temp dir.
func runnerBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("BEAM_RUNNER_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "beam-runner")
	build := exec.Command("go", "build", "-o", bin, "./cmd/beam-runner")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/beam-runner: %v\n%s", err, out)
	}
	return bin
}

// kafkaClient runs KafkaRecords.java (produce or consume) on the broker's
// classpath; stdin may be empty.
func kafkaClient(t *testing.T, ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", javaLib(t, "kafka"), "KafkaRecords.java"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("KafkaRecords %s: %v\n%s", args[0], err, tailString(errb.String(), 20))
	}
	return out.String(), nil
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
