package execute

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"google.golang.org/protobuf/types/known/structpb"
)

// workersPerEnv reads jobs.WorkersOption (--workers_per_environment) from
// the job's options: how many SDK harnesses each environment gets. Python
// runs a harness's bundles on threads under one interpreter lock, so
// CPU-bound Python scales only with harness processes (an EXTERNAL worker
// pool, PROCESS or DOCKER). Absent, it is the machine's cores, or 1 for an
// environment whose harnesses would share one interpreter (sharedInterpreter).
// SDKs send integers as strings or numbers.
func workersPerEnv(opts *structpb.Struct, env *pipepb.Environment) (int, error) {
	v, ok := option(opts, jobs.WorkersOption)
	if !ok || v.GetKind() == nil {
		if sharedInterpreter(env, opts) {
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
		return 0, fmt.Errorf("job option %s: want a whole number from 1 to 256, got %v", jobs.WorkersOption, v.AsInterface())
	}
	return n, nil
}

// option finds a job option under Python's URN-style name or the plain one.
func option(opts *structpb.Struct, name string) (*structpb.Value, bool) {
	v, ok := opts.GetFields()["beam:option:"+name+":v1"]
	if !ok {
		v, ok = opts.GetFields()[name]
	}
	return v, ok
}

// sharedInterpreter reports whether an environment's harnesses all run in
// one Python interpreter: a Python LOOPBACK job starts them as threads of
// the submitting process (unless its use_loopback_process_worker
// experiment asks for processes), where bundles run at once only contend
// for the interpreter lock. Measured on wordcount over 60 MiB: 4 bundles
// at once on 2 harnesses 55.9 s, 1 bundle on 1 harness 40.5 s.
func sharedInterpreter(env *pipepb.Environment, opts *structpb.Struct) bool {
	if !strings.Contains(sdkBase(env), "python") || !loopbackOptions(opts) {
		return false
	}
	exps, _ := option(opts, "experiments")
	for _, e := range exps.GetListValue().GetValues() {
		if e.GetStringValue() == "use_loopback_process_worker" {
			return false
		}
	}
	return true
}

// workerSet is one environment's harnesses. A bundle goes to the harness
// running the fewest; its splits, progress and finalization go to the
// harness that runs it, found from the instruction key the set hands out
// ("<harness index>/<instruction>": instruction ids are per harness).
type workerSet struct {
	hs []*harness.Harness

	mu      sync.Mutex
	running []int // bundles running per harness
}

func newWorkerSet(hs []*harness.Harness) *workerSet {
	return &workerSet{hs: hs, running: make([]int, len(hs))}
}

// Register sends the descriptors to every harness.
func (ws *workerSet) Register(ctx context.Context, descs ...*fnpb.ProcessBundleDescriptor) error {
	for _, h := range ws.hs {
		if err := h.Register(ctx, descs...); err != nil {
			return err
		}
	}
	return nil
}

// Process runs b on the least busy harness. b.Started and the result's
// Instruction carry instruction keys for Split, Progress and Finalize.
func (ws *workerSet) Process(ctx context.Context, b harness.Bundle) (harness.Result, error) {
	i := ws.acquire()
	defer ws.release(i)
	if started := b.Started; started != nil {
		b.Started = func(inst string) { started(instKey(i, inst)) }
	}
	res, err := ws.hs[i].Process(ctx, b)
	res.Instruction = instKey(i, res.Instruction)
	return res, err
}

func (ws *workerSet) acquire() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	best := 0
	for i, n := range ws.running {
		if n < ws.running[best] {
			best = i
		}
	}
	ws.running[best]++
	return best
}

func (ws *workerSet) release(i int) {
	ws.mu.Lock()
	ws.running[i]--
	ws.mu.Unlock()
}

// Split asks the harness running key's bundle to split it.
func (ws *workerSet) Split(ctx context.Context, key, source string, fraction float64, estimatedElements int64) (harness.SplitResult, error) {
	h, inst, err := ws.route(key)
	if err != nil {
		return harness.SplitResult{}, err
	}
	return h.Split(ctx, inst, source, fraction, estimatedElements)
}

// Progress asks the harness running key's bundle for its metrics so far.
func (ws *workerSet) Progress(ctx context.Context, key string) ([]*pipepb.MonitoringInfo, error) {
	h, inst, err := ws.route(key)
	if err != nil {
		return nil, err
	}
	return h.Progress(ctx, inst)
}

// Finalize runs the finalization callbacks of key's bundle.
func (ws *workerSet) Finalize(ctx context.Context, key string) error {
	h, inst, err := ws.route(key)
	if err != nil {
		return err
	}
	return h.Finalize(ctx, inst)
}

func instKey(i int, inst string) string { return strconv.Itoa(i) + "/" + inst }

func (ws *workerSet) route(key string) (*harness.Harness, string, error) {
	idx, inst, ok := strings.Cut(key, "/")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= len(ws.hs) {
		return nil, "", fmt.Errorf("instruction key %q names no harness of this environment", key)
	}
	return ws.hs[i], inst, nil
}

// sdkBase is the environment's SDK base version capability (such as
// "beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"); "" if it has none.
func sdkBase(env *pipepb.Environment) string {
	for _, c := range env.GetCapabilities() {
		if strings.HasPrefix(c, "beam:version:sdk_base:") {
			return c
		}
	}
	return ""
}
