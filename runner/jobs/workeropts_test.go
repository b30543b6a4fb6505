package jobs

import (
	"runtime"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestWorkersPerEnv(t *testing.T) {
	key := "beam:option:workers_per_environment:v1"
	goEnv := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"}}
	pyEnv := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}}
	loopback := "beam:option:environment_type:v1"
	for _, tc := range []struct {
		opts    map[string]any
		env     *pipepb.Environment
		want    int
		wantErr bool
	}{
		{opts: nil, want: runtime.NumCPU()},
		{opts: map[string]any{key: "3"}, want: 3}, // Python sends ints as strings
		{opts: map[string]any{key: 4.0}, want: 4}, // a JSON number
		{opts: map[string]any{"workers_per_environment": "2"}, want: 2},
		{opts: map[string]any{key: "0"}, wantErr: true},
		{opts: map[string]any{key: "many"}, wantErr: true},
		{opts: map[string]any{key: 1.5}, wantErr: true},
		{opts: map[string]any{key: "100000"}, wantErr: true},
		// Python LOOPBACK harnesses share the client's interpreter: one by
		// default, as many as asked for; processes or Go: the cores.
		{opts: map[string]any{loopback: "LOOPBACK"}, env: pyEnv, want: 1},
		{opts: map[string]any{loopback: "loopback", key: "3"}, env: pyEnv, want: 3},
		{opts: map[string]any{loopback: "LOOPBACK", "beam:option:experiments:v1": []any{"use_loopback_process_worker"}}, env: pyEnv, want: runtime.NumCPU()},
		{opts: map[string]any{loopback: "EXTERNAL"}, env: pyEnv, want: runtime.NumCPU()},
		{opts: map[string]any{"environment_type": "LOOPBACK"}, env: goEnv, want: runtime.NumCPU()},
	} {
		s, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PerEnv(s, tc.env)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("%v: got %d, %v; want %d (error %v)", tc.opts, got, err, tc.want, tc.wantErr)
		}
	}
}
