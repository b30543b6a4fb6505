package jobs

import (
	"encoding/json"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"google.golang.org/protobuf/types/known/structpb"
)

// LOOPBACK is recognised in the options both SDKs send: Go's wrapped
// go_options (built here by the Go SDK's own type) and Python's flat keys.
func TestLoopbackOptionsAsSDKsSendThem(t *testing.T) {
	goOpts := func(env string) *structpb.Struct {
		b, err := json.Marshal(runtime.RawOptionsWrapper{Options: runtime.RawOptions{Options: map[string]string{"environment_type": env}}})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pyOpts := func(env string) *structpb.Struct {
		s, _ := structpb.NewStruct(map[string]any{"beam:option:environment_type:v1": env})
		return s
	}
	for _, tc := range []struct {
		name string
		opts *structpb.Struct
		want bool
	}{
		{"go loopback", goOpts("LOOPBACK"), true},
		{"go external", goOpts("EXTERNAL"), false},
		{"python loopback", pyOpts("LOOPBACK"), true},
		{"python process", pyOpts("PROCESS"), false},
		{"none", nil, false},
	} {
		if got := LoopbackOptions(tc.opts); got != tc.want {
			t.Errorf("%s: loopback = %v, want %v", tc.name, got, tc.want)
		}
	}
}
