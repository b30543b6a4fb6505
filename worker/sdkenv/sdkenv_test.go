package sdkenv

import (
	"slices"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  Image
		ok    bool
	}{
		{"apache/beam_python3.11_sdk:2.77.0", Image{Python, "3.11", "2.77.0"}, true},
		{"docker.io/apache/beam_python3.12_sdk:2.78.0rc1", Image{Python, "3.12", "2.78.0rc1"}, true},
		{"apache/beam_go_sdk:2.77.0", Image{Go, "", "2.77.0"}, true},
		{"apache/beam_java11_sdk:2.77.0", Image{Java, "11", "2.77.0"}, true},
		{"apache/beam_java17_sdk:2.73.0", Image{Java, "17", "2.73.0"}, true},
		{"docker.io/apache/beam_java21_sdk:2.73.0", Image{Java, "21", "2.73.0"}, true},
		{"index.docker.io/apache/beam_java25_sdk:2.78.0.dev", Image{Java, "25", "2.78.0.dev"}, true},
		{"apache/beam_java7_sdk:2.73.0", Image{}, false},
		{"apache/beam_java_sdk:2.73.0", Image{}, false},
		{"apache/beam_java17_sdk:latest", Image{}, false},
		{"gcr.io/apache/beam_java17_sdk:2.73.0", Image{}, false},
		{"apache/beam_python3.11_sdk", Image{}, false},
		{"apache/beam_python3.11_sdk:latest", Image{}, false},
		{"example.com/apache/beam_go_sdk:2.77.0", Image{}, false},
		{"myorg/beam_python3.11_sdk:2.77.0", Image{}, false},
	} {
		got, ok := ParseImage(tc.image)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseImage(%q) = %+v, %v; want %+v, %v", tc.image, got, ok, tc.want, tc.ok)
		}
	}
}

// The SDK comes from the sdk_base capability, as each SDK writes it; an
// image that does not parse still names its SDK.
func TestSDKOf(t *testing.T) {
	for _, tc := range []struct {
		caps    []string
		want    SDK
		image   Image
		imageOK bool
	}{
		{[]string{"beam:coder:bytes:v1", "beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}, Python, Image{Python, "3.11", "2.77.0"}, true},
		{[]string{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"}, Go, Image{Go, "", "2.77.0"}, true},
		{[]string{"beam:version:sdk_base:apache/beam_java17_sdk:2.73.0"}, Java, Image{Java, "17", "2.73.0"}, true},
		{[]string{"beam:version:sdk_base:apache/beam_python_sdk:custom"}, Python, Image{}, false},
		{[]string{"beam:version:sdk_base:apache/beam_javascript_sdk:1.0.0"}, "", Image{}, false},
		{[]string{"beam:coder:bytes:v1"}, "", Image{}, false},
		{nil, "", Image{}, false},
	} {
		env := &pipepb.Environment{Capabilities: tc.caps}
		e, err := Parse(env)
		if err != nil || SDKOf(env) != tc.want || e.SDK != tc.want || e.BaseImage != tc.image || e.HasBaseImage != tc.imageOK {
			t.Errorf("%q: SDKOf %q, Parse %+v, %v; want %q, image %+v %v", tc.caps, SDKOf(env), e, err, tc.want, tc.image, tc.imageOK)
		}
	}
}

func TestParseKinds(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ext, err := Parse(&pipepb.Environment{Urn: URNExternal, Payload: marshal(&pipepb.ExternalPayload{
		Endpoint: &pipepb.ApiServiceDescriptor{Url: "localhost:5"}, Params: map[string]string{"k": "v"}})})
	if err != nil || ext.Kind != External || ext.Endpoint != "localhost:5" || ext.Params["k"] != "v" {
		t.Errorf("external: %+v, %v", ext, err)
	}
	proc, err := Parse(&pipepb.Environment{Urn: URNProcess, Payload: marshal(&pipepb.ProcessPayload{
		Command: "/boot", Env: map[string]string{"A": "1"}})})
	if err != nil || proc.Kind != Process || proc.Command != "/boot" || proc.Vars["A"] != "1" {
		t.Errorf("process: %+v, %v", proc, err)
	}
	dock, err := Parse(&pipepb.Environment{Urn: URNDocker, Payload: marshal(&pipepb.DockerPayload{ContainerImage: "img"})})
	if err != nil || dock.Kind != Docker || dock.Image != "img" {
		t.Errorf("docker: %+v, %v", dock, err)
	}
	alt := &pipepb.Environment{Urn: URNDocker}
	anyOf, err := Parse(&pipepb.Environment{Urn: URNAnyOf, Payload: marshal(&pipepb.AnyOfEnvironmentPayload{
		Environments: []*pipepb.Environment{alt, alt}})})
	if err != nil || anyOf.Kind != AnyOf || len(anyOf.Alternatives) != 2 {
		t.Errorf("anyof: %+v, %v", anyOf, err)
	}
	if u, err := Parse(&pipepb.Environment{Urn: "beam:env:made_up:v1", Payload: []byte{0xff}}); err != nil || u.Kind != Unknown {
		t.Errorf("unknown urn: %+v, %v", u, err)
	}
	for _, urn := range []string{URNExternal, URNProcess, URNDocker, URNAnyOf} {
		_, err := Parse(&pipepb.Environment{Urn: urn, Payload: []byte{0xff}})
		if err == nil || !strings.Contains(err.Error(), "bad payload") || !strings.Contains(err.Error(), KindOf(urn).String()) {
			t.Errorf("%s with a bad payload: %v", urn, err)
		}
	}
}

// A fourth SDK is its own Register call: its images and its sdk_base
// capability are recognised with no other change.
func TestRegisterFourth(t *testing.T) {
	const rust SDK = "rust"
	registry.RLock()
	saved := slices.Clone(registry.specs)
	registry.RUnlock()
	defer func() {
		registry.Lock()
		registry.specs = saved
		registry.Unlock()
	}()
	Register(Spec{Name: rust, Tag: "rust"})
	img, ok := ParseImage("apache/beam_rust_sdk:0.1.0")
	if !ok || img != (Image{rust, "", "0.1.0"}) {
		t.Errorf("image: %+v, %v", img, ok)
	}
	if got := SDKOf(&pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:apache/beam_rust_sdk:0.1.0"}}); got != rust {
		t.Errorf("SDKOf = %q", got)
	}
}

// TestCheckpointsExactly: the runner checkpoints bundles by time only
// for SDKs that stop exactly at a checkpoint; Go 2.77's does not.
func TestCheckpointsExactly(t *testing.T) {
	for base, want := range map[string]bool{
		"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0":      false,
		"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0": true,
		"beam:version:sdk_base:apache/beam_java17_sdk:2.73.0":     true,
		"": true,
	} {
		env := &pipepb.Environment{Capabilities: []string{"beam:coder:bytes:v1"}}
		if base != "" {
			env.Capabilities = append(env.Capabilities, base)
		}
		if got := CheckpointsExactly(env); got != want {
			t.Errorf("CheckpointsExactly(%q) = %v, want %v", base, got, want)
		}
	}
}
