package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/beam-runner/beam-runner/runner/savepoint"
	"google.golang.org/protobuf/types/known/structpb"
)

// Pipeline options of a job started from a savepoint or updating a
// running job, spelled as Dataflow spells them.
const (
	// TransformNameMappingOption renames steps, old unique name to new,
	// as JSON: --transform_name_mapping='{"old":"new"}'.
	TransformNameMappingOption = "transform_name_mapping"
	// AllowDroppedStateOption lets a new pipeline leave out steps that
	// hold state, dropping it on purpose (Flink's allowNonRestoredState).
	AllowDroppedStateOption = "allow_dropped_state"
	// UpdateOption, with JobNameOption, replaces the running job of that
	// name with this one, which starts from its savepoint.
	UpdateOption  = "update"
	JobNameOption = "job_name"
	// StartStageOption is set by the runner, not the user: the
	// transforms (by id) a job started from a savepoint has its plan
	// start stages with, so that a restart plans it the same way.
	StartStageOption = "beam_runner_start_stage"
)

// RestoreOptions are how a new pipeline takes a savepoint's state.
type RestoreOptions struct {
	Mapping      savepoint.Mapping
	AllowDropped bool
}

// restoreOptions reads a job's RestoreOptions from its pipeline options.
func restoreOptions(opts *structpb.Struct) (RestoreOptions, error) {
	var ro RestoreOptions
	if v, ok := Option(opts, TransformNameMappingOption); ok {
		m, err := parseMapping(v)
		if err != nil {
			return ro, fmt.Errorf("option %s: %w", TransformNameMappingOption, err)
		}
		ro.Mapping = m
	}
	ro.AllowDropped = boolOption(opts, AllowDroppedStateOption)
	return ro, nil
}

// parseMapping reads a name mapping given as a JSON object (a string,
// as flags send it) or as a struct.
func parseMapping(v *structpb.Value) (savepoint.Mapping, error) {
	m := savepoint.Mapping{}
	switch x := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if x.StringValue == "" {
			return m, nil
		}
		if err := json.Unmarshal([]byte(x.StringValue), &m); err != nil {
			return nil, fmt.Errorf(`want a JSON object of old to new unique names, {"old":"new"}: %v`, err)
		}
	case *structpb.Value_StructValue:
		for k, val := range x.StructValue.GetFields() {
			s, ok := val.GetKind().(*structpb.Value_StringValue)
			if !ok {
				return nil, fmt.Errorf("the new name of %q is not a string", k)
			}
			m[k] = s.StringValue
		}
	default:
		return nil, fmt.Errorf(`want a JSON object of old to new unique names, {"old":"new"}, got %v`, v.AsInterface())
	}
	return m, nil
}

// boolOption reads a flag option: true, "true", or present and empty.
func boolOption(opts *structpb.Struct, name string) bool {
	v, ok := Option(opts, name)
	if !ok {
		return false
	}
	switch x := v.GetKind().(type) {
	case *structpb.Value_BoolValue:
		return x.BoolValue
	case *structpb.Value_StringValue:
		return x.StringValue == "" || x.StringValue == "true" || x.StringValue == "1"
	}
	return false
}

// StartStages reads StartStageOption.
func StartStages(opts *structpb.Struct) []string {
	v, ok := Option(opts, StartStageOption)
	if !ok {
		return nil
	}
	var out []string
	for _, x := range v.GetListValue().GetValues() {
		out = append(out, x.GetStringValue())
	}
	return out
}

// withStartStages returns opts with StartStageOption set to ids (opts
// itself is not changed); opts unchanged if ids is empty.
func withStartStages(opts *structpb.Struct, ids []string) *structpb.Struct {
	if len(ids) == 0 {
		return opts
	}
	vals := make([]*structpb.Value, len(ids))
	for i, id := range ids {
		vals[i] = structpb.NewStringValue(id)
	}
	return withOption(opts, StartStageOption, structpb.NewListValue(&structpb.ListValue{Values: vals}))
}
