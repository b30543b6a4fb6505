package jobs

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestRestoreOptions(t *testing.T) {
	opts := func(kv map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(kv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ro, err := restoreOptions(opts(map[string]any{"beam:option:transform_name_mapping:v1": `{"running":"tally"}`, "allow_dropped_state": true}))
	if err != nil || ro.Mapping["running"] != "tally" || !ro.AllowDropped {
		t.Errorf("restoreOptions = %+v, %v", ro, err)
	}
	ro, err = restoreOptions(opts(map[string]any{"transform_name_mapping": map[string]any{"a": "b"}, "allow_dropped_state": "false"}))
	if err != nil || ro.Mapping["a"] != "b" || ro.AllowDropped {
		t.Errorf("restoreOptions of a struct = %+v, %v", ro, err)
	}
	if _, err := restoreOptions(opts(map[string]any{"transform_name_mapping": "[1]"})); err == nil || !strings.Contains(err.Error(), `option transform_name_mapping: want a JSON object of old to new unique names, {"old":"new"}`) {
		t.Errorf("a list: %v", err)
	}
	o := withStartStages(opts(map[string]any{"a": "b"}), []string{"e3", "e7"})
	if got := StartStages(o); len(got) != 2 || got[1] != "e7" {
		t.Errorf("StartStages = %v", got)
	}
}

// A job is named by its --job_name when given (Python prepares every
// job as "job"), else by the request's name.
func TestJobNameFromTheOption(t *testing.T) {
	for _, c := range []struct {
		req  string
		opts map[string]any
		want string
	}{
		{"job", map[string]any{"beam:option:job_name:v1": "counts"}, "counts"},
		{"go-job", map[string]any{"job_name": ""}, "go-job"},
		{"go-job", nil, "go-job"},
	} {
		s, err := structpb.NewStruct(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := jobName(c.req, s); got != c.want {
			t.Errorf("jobName(%q, %v) = %q, want %q", c.req, c.opts, got, c.want)
		}
	}
}

// The options the runner adds reach the SDK harnesses, whose Java and
// Python option readers take only beam:option:NAME:v1 keys.
func TestRunnerOptionsAreURNKeyed(t *testing.T) {
	in, err := structpb.NewStruct(map[string]any{"beam:option:job_name:v1": "j", StartStageOption: []any{"old"}})
	if err != nil {
		t.Fatal(err)
	}
	o := withStartStages(in, []string{"e3"})
	o = withOption(o, FromSavepointOption, structpb.NewStringValue("/sp"))
	for k := range o.GetFields() {
		if !strings.HasPrefix(k, "beam:option:") || !strings.HasSuffix(k, ":v1") {
			t.Errorf("option key %q: an SDK harness cannot read it", k)
		}
	}
	if got := StartStages(o); len(got) != 1 || got[0] != "e3" {
		t.Errorf("StartStages = %v, want [e3]", got)
	}
	if v, _ := Option(o, FromSavepointOption); v.GetStringValue() != "/sp" {
		t.Errorf("%s = %v", FromSavepointOption, v)
	}
	if len(in.GetFields()) != 2 || StartStages(in)[0] != "old" {
		t.Errorf("the options given were changed: %v", in)
	}
}
