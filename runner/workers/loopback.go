package workers

import (
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Loopback reports whether a job's options ask for LOOPBACK workers,
// which live inside its client. Python sends the option at the top level,
// Go inside go_options.options.
func Loopback(o *structpb.Struct) bool {
	opts := o.GetFields()
	if isLoopback(opts["beam:option:environment_type:v1"]) {
		return true
	}
	goOpts := opts["beam:option:go_options:v1"].GetStructValue().GetFields()["options"]
	return isLoopback(goOpts.GetStructValue().GetFields()["environment_type"])
}

func isLoopback(v *structpb.Value) bool { return strings.EqualFold(v.GetStringValue(), "LOOPBACK") }
