package jobs

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/types/known/structpb"
)

// PerEnv reads WorkersOption (--workers_per_environment) from
// the job's options: how many SDK harnesses each environment gets. Python
// runs a harness's bundles on threads under one interpreter lock, so
// CPU-bound Python scales only with harness processes (an EXTERNAL worker
// pool, PROCESS or DOCKER). Absent, it is the machine's cores, or 1 for an
// environment whose harnesses would share one interpreter (SharedInterpreter).
// SDKs send integers as strings or numbers.
func PerEnv(opts *structpb.Struct, env *pipepb.Environment) (int, error) {
	v, ok := Option(opts, WorkersOption)
	if !ok || v.GetKind() == nil {
		if SharedInterpreter(env, opts) {
			return 1, nil
		}
		return runtime.NumCPU(), nil
	}
	var n int
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		n = int(k.NumberValue)
		if float64(n) != k.NumberValue {
			n = 0
		}
	case *structpb.Value_StringValue:
		n, _ = strconv.Atoi(strings.TrimSpace(k.StringValue))
	}
	if n < 1 || n > 256 {
		return 0, fmt.Errorf("job option %s: want a whole number from 1 to 256, got %v", WorkersOption, v.AsInterface())
	}
	return n, nil
}

// Option finds a job option under Python's URN-style name or the plain one.
func Option(opts *structpb.Struct, name string) (*structpb.Value, bool) {
	v, ok := opts.GetFields()[optionKey(name)]
	if !ok {
		v, ok = opts.GetFields()[name]
	}
	return v, ok
}

// optionKey is the key SDKs send option name under, and read it from.
func optionKey(name string) string { return "beam:option:" + name + ":v1" }

// withOption returns a copy of opts with option name set to v, under
// its URN-style key: the runner's options reach the SDK harnesses too,
// and Java's and Python's read no other key (Java's harness dies at a
// plain "from_savepoint"). A plain key of the name is dropped; opts
// itself is not changed.
func withOption(opts *structpb.Struct, name string, v *structpb.Value) *structpb.Struct {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(opts.GetFields())+1)}
	for k, x := range opts.GetFields() {
		out.Fields[k] = x
	}
	delete(out.Fields, name)
	out.Fields[optionKey(name)] = v
	return out
}

// SharedInterpreter reports whether an environment's harnesses all run in
// one Python interpreter: a Python LOOPBACK job starts them as threads of
// the submitting process (unless its use_loopback_process_worker
// experiment asks for processes), where bundles run at once only contend
// for the interpreter lock. Measured on wordcount over 60 MiB: 4 bundles
// at once on 2 harnesses 55.9 s, 1 bundle on 1 harness 40.5 s.
func SharedInterpreter(env *pipepb.Environment, opts *structpb.Struct) bool {
	if sdkenv.SDKOf(env) != sdkenv.Python || !LoopbackOptions(opts) {
		return false
	}
	exps, _ := Option(opts, "experiments")
	for _, e := range exps.GetListValue().GetValues() {
		if e.GetStringValue() == "use_loopback_process_worker" {
			return false
		}
	}
	return true
}
