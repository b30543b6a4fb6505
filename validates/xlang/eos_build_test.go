//go:build xlang

package xlang

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// eosProto is a translation of KafkaEosCounts.java.
type eosProto struct {
	p    *pipepb.Pipeline
	opts *structpb.Struct
	err  error
}

// buildEOSPipeline compiles KafkaEosCounts.java and translates it once.
func buildEOSPipeline(t *testing.T, ctx context.Context, boot, in, out string) (*pipepb.Pipeline, *structpb.Struct) {
	t.Helper()
	p, opts, err := compileEOS(t, ctx, boot, in, out).translate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p, opts
}

// eosBuild is KafkaEosCounts.java compiled against the expansion
// service's jars (Beam's Java SDK, KafkaIO, kafka-clients, the harness).
type eosBuild struct {
	dir, jar, lib string
	args          []string
}

func compileEOS(t *testing.T, ctx context.Context, boot, in, out string) *eosBuild {
	t.Helper()
	dir := t.TempDir()
	b := &eosBuild{dir: dir, jar: filepath.Join(dir, "pipeline.jar"), lib: javaLib(t, "expansion"),
		args: []string{boot, in, out, fmt.Sprint(windowMs / 1000), fmt.Sprint(eosShards), eosGroup}}
	classes := filepath.Join(dir, "classes")
	steps := [][]string{
		{"javac", "-nowarn", "-d", classes, "-cp", b.lib, "KafkaEosCounts.java"},
		{"jar", "cf", b.jar, "-C", classes, "."},
	}
	for _, step := range steps {
		if out, err := exec.CommandContext(ctx, step[0], step[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(step[:2], " "), err, tailString(string(out), 30))
		}
	}
	return b
}

// translate runs the pipeline to translate it, afresh each call (a new
// build: new schema UUIDs in its Java coders), into the pipeline proto
// and options it writes; its environment stages the jars. Safe to call
// from another goroutine.
func (b *eosBuild) translate(ctx context.Context) (*pipepb.Pipeline, *structpb.Struct, error) {
	dir, err := os.MkdirTemp(b.dir, "proto")
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{"-cp", b.jar + ":" + b.lib, "KafkaEosCounts", dir}, b.args...)
	if out, err := exec.CommandContext(ctx, "java", args...).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("java KafkaEosCounts: %v\n%s", err, tailString(string(out), 30))
	}
	var p pipepb.Pipeline
	var opts structpb.Struct
	for name, m := range map[string]proto.Message{"pipeline.pb": &p, "options.pb": &opts} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = proto.Unmarshal(data, m)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	return &p, &opts, nil
}

// translateAsync is translate on a goroutine of its own.
func (b *eosBuild) translateAsync(ctx context.Context) <-chan eosProto {
	ch := make(chan eosProto, 1)
	go func() {
		p, opts, err := b.translate(ctx)
		ch <- eosProto{p, opts, err}
	}()
	return ch
}
