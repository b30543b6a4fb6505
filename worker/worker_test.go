package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func TestDockerArgsCarryBootFlags(t *testing.T) {
	args := strings.Join(DockerArgs("apache/beam_go_sdk:2.77.0", "w1", Endpoints{Control: "localhost:1", Provision: "localhost:2"}), " ")
	for _, want := range []string{"--network=host", "--name=beam-runner-w1", "apache/beam_go_sdk:2.77.0", "--id=w1", "--control_endpoint=localhost:1", "--provision_endpoint=localhost:2"} {
		if !strings.Contains(args, want) {
			t.Errorf("docker args %q lack %q", args, want)
		}
	}
}

func TestUnsupportedAndMalformedEnvironments(t *testing.T) {
	ctx := context.Background()
	l := NewLauncher(Config{}, Job{})
	if _, err := l.Start(ctx, "e", &pipepb.Environment{Urn: "beam:env:made_up:v1"}, "w", Endpoints{}); err == nil || !strings.Contains(err.Error(), "made_up") {
		t.Errorf("unknown URN: err = %v", err)
	}
	if _, err := l.Start(ctx, "e", &pipepb.Environment{Urn: URNProcess, Payload: []byte{0xff}}, "w", Endpoints{}); err == nil {
		t.Error("malformed process payload accepted")
	}
	if _, err := l.Start(ctx, "e", &pipepb.Environment{Urn: URNExternal}, "w", Endpoints{}); err == nil {
		t.Error("external environment without endpoint accepted")
	}
}

// A PROCESS environment's command gets the boot flags and is stopped.
func TestProcessEnvironmentStartsAndStops(t *testing.T) {
	pl, _ := proto.Marshal(&pipepb.ProcessPayload{Command: "/bin/sleep", Env: map[string]string{"X": "1"}})
	// sleep rejects the boot flags and exits: Exited must close.
	h, err := NewLauncher(Config{}, Job{}).Start(context.Background(), "e", &pipepb.Environment{Urn: URNProcess, Payload: pl}, "w", Endpoints{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit", "\n"+testwait.Goroutines())
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
