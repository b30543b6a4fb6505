// Package serverflags defines the job server's flags, apart from its
// main package so that tests (the Kubernetes manifests' among them) can
// parse arguments exactly as the server does.
package serverflags

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
)

// Flags are the parsed values of the server's flags.
type Flags struct {
	JobPort            int
	JobHost            string
	FnAPIHost          string
	FnAPIAdvertise     string
	FnAPIPorts         string
	LogLevel           string
	LogKind            string
	ServeHTTP          bool
	WebPort            int
	WebAllowedHosts    string
	Pprof              bool
	JMOverride         string
	IdleShutdown       time.Duration
	CPUProfile         string
	PprofAddr          string
	ArtifactRoot       string
	MaxFinishedJobs    int
	MaxPreparedBytes   int64
	WorkerStartTimeout time.Duration
	MaxBundleAttempts  int
	MemoryLimit        string
	CheckpointInterval time.Duration
	CombineTreeBytes   int
	RateWindow         time.Duration
	// FlowControl and its bounds: see runner/engine/flowctl.go.
	FlowControl         bool
	FlowControlMinBytes int64
	FlowControlMaxBytes int64
	// Scaling is --autoscaling and its bounds and intervals (docs/scaling.md).
	Scaling          jobs.Scaling
	SDKContainers    string
	SDKPython        string
	SDKJava          string
	SDKJavaClasspath string
	VenvDir          string
	StateDir         string
	// WorkerPools are the --worker_pools specs, in order (the flag may be
	// given more than once); placement.ParsePools reads them.
	WorkerPools Strings
	// WorkerPoolsRefresh is how often a running job resolves its pools'
	// hosts again; 0 never.
	WorkerPoolsRefresh time.Duration
	// Deprecated lists the deprecated flags given, each with what to use
	// instead, for the server to warn about once its logger is up.
	Deprecated []string
}

// Strings is a flag that may be given more than once.
type Strings []string

func (s *Strings) String() string { return strings.Join(*s, ";") }

// Set implements flag.Value.
func (s *Strings) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// Register defines the server's flags on fs.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.IntVar(&f.JobPort, "job_port", 8073, "job management service port")
	fs.StringVar(&f.JobHost, "job_host", "localhost", "interface the job service (and artifact staging) listens on; 0.0.0.0 for every one, e.g. behind a Kubernetes Service")
	fs.StringVar(&f.FnAPIHost, "fn_api_host", "127.0.0.1", "interface each job's Fn API server (control, data, state, logging, artifacts, provision) listens on; workers on other hosts need a reachable one, e.g. 0.0.0.0 with --fn_api_advertise. The Fn API has no authentication: see docs/operations.md")
	fs.StringVar(&f.FnAPIAdvertise, "fn_api_advertise", "", "host name or IP workers are told to dial for the Fn API (default --fn_api_host; required when that is 0.0.0.0 or ::)")
	fs.StringVar(&f.FnAPIPorts, "fn_api_ports", "", "ports the Fn API servers take, LO-HI or one port, one per running job, e.g. for a firewall or NetworkPolicy (default any free port)")
	fs.StringVar(&f.LogLevel, "log_level", "info", "minimum log level: debug, info, warn or error")
	fs.StringVar(&f.LogKind, "log_kind", "dev", "log format: dev (human readable), json or text")
	fs.BoolVar(&f.ServeHTTP, "serve_http", true, "serve the web UI and /metrics on --web_port")
	fs.IntVar(&f.WebPort, "web_port", 8074, "port of the web UI, /metrics and (with --pprof) /debug/pprof; 0 picks a free one")
	fs.StringVar(&f.WebAllowedHosts, "web_allowed_hosts", "", "comma-separated host names the web UI answers to besides localhost, 127.0.0.1 and [::1], e.g. the name of a proxy in front of it; requests naming any other host get 403")
	fs.BoolVar(&f.Pprof, "pprof", false, "serve /debug/pprof on --web_port")
	fs.StringVar(&f.JMOverride, "jm_override", "", "accepted for Prism compatibility; not supported")
	fs.DurationVar(&f.IdleShutdown, "idle_shutdown_timeout", 0, "exit after no job has run for this long; 0 or negative: never")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&f.PprofAddr, "pprof_addr", "", "also serve /debug/pprof on this address of its own (older form of --pprof)")
	fs.StringVar(&f.ArtifactRoot, "artifact_root", "", "directory for staged artifacts (default: with --state_dir DIR, DIR/artifacts, so jobs resumed after a restart find theirs; else a fresh private directory in $TMPDIR, removed at exit; roots of dead servers are removed)")
	fs.IntVar(&f.MaxFinishedJobs, "max_finished_jobs", jobs.DefaultMaxFinishedJobs, "ended jobs kept, listed and saved; past it the oldest are forgotten (0: the default; negative: no cap)")
	fs.Int64Var(&f.MaxPreparedBytes, "max_prepared_bytes", jobs.DefaultMaxPreparedBytes, "cap on the pipeline bytes of prepared jobs not yet run; Prepare past it gets RESOURCE_EXHAUSTED (negative: no cap)")
	fs.DurationVar(&f.WorkerStartTimeout, "worker_start_timeout", 2*time.Minute, "how long an environment's SDK harness may take to connect before its job fails")
	fs.IntVar(&f.MaxBundleAttempts, "max_bundle_attempts", 4, "how many times a bundle whose worker died may run before its job fails; one whose user code failed runs again only on another worker, and not after failing the same way twice (docs/durability.md)")
	fs.StringVar(&f.MemoryLimit, "memory_limit", "", "bytes a job's GroupByKeys and pending bundle input may buffer before spilling to the store, e.g. 512MiB; default a quarter of the machine's memory; \"none\": no limit")
	fs.IntVar(&f.CombineTreeBytes, "combine_tree_bytes", 0, "bytes of accumulators a lifted combine's GroupByKey takes in before the SDK combines them, and again as combined ones come back (a combiner tree), so it holds about one per key and window; 0: the default (8 MiB); negative: never, every accumulator waits for its window to close")
	fs.Func("combine_merge_bytes", "deprecated: use --combine_tree_bytes", func(v string) error {
		f.Deprecated = append(f.Deprecated, "--combine_merge_bytes is deprecated: use --combine_tree_bytes")
		return fs.Lookup("combine_tree_bytes").Value.Set(v)
	})
	fs.BoolVar(&f.FlowControl, "flow_control", true, "hold a streaming job's sources while a stage's queued input is over its bound (about a second of the stage's measured throughput), so a backlog stays in the source (Kafka lag) rather than in the runner's memory and store; batch jobs are never held")
	fs.Int64Var(&f.FlowControlMinBytes, "flow_control_min_bytes", engine.DefaultFlowMinBytes, "least bound, in bytes, on a streaming stage's queued input once its rate is measured (--flow_control; before that, 1 MiB)")
	fs.Int64Var(&f.FlowControlMaxBytes, "flow_control_max_bytes", engine.DefaultFlowMaxBytes, "greatest bound, in bytes, on a streaming stage's queued input (--flow_control)")
	fs.DurationVar(&f.CheckpointInterval, "checkpoint_interval", 10*time.Second, "least time between two checkpoints of a streaming job in the --state_dir store, from which it resumes after a crash (a batch job runs again from the beginning); 0 takes none")
	fs.DurationVar(&f.RateWindow, "rate_window", 10*time.Second, "sliding window over which each stage's busy/idle ms per second, processing rate and observed rates are measured (web UI, /metrics, Job API metrics)")
	registerScaling(fs, &f.Scaling)
	fs.StringVar(&f.SDKContainers, "sdk_containers", "auto", "how environments of Beam's own SDK images (apache/beam_python3.X_sdk, apache/beam_go_sdk, apache/beam_javaNN_sdk) run: auto (in Docker when a Docker daemon answers, else as local SDK worker processes), local (always local processes) or docker")
	fs.StringVar(&f.SDKPython, "sdk_python", "", "Python interpreter of local Python SDK workers (default: python3.X of the image, then python3, on PATH; it must have the image's apache-beam version)")
	fs.StringVar(&f.SDKJava, "sdk_java", "", "java of local Java SDK workers, a java binary or a Java home (default: the image's Java from JAVA_HOME, PATH or /usr/lib/jvm, else the oldest newer one there)")
	fs.StringVar(&f.SDKJavaClasspath, "sdk_java_classpath", "", "directory of jars that local Java SDK workers run Beam's Java harness from, before the job's staged jars (default: the staged jars if they carry the harness, else the local Maven repository, else fetched once with mvn into beam-runner/java in the user's cache dir)")
	fs.StringVar(&f.VenvDir, "venv_dir", "", "where virtualenvs for jobs' Python requirements are kept and reused (default: beam-runner/venvs in the user's cache dir)")
	fs.StringVar(&f.StateDir, "state_dir", "", "directory of the durable store: job records and streaming jobs' checkpoints survive restarts (default: none; job records are kept in memory and jobs spill to a temporary store in $TMPDIR, removed at exit); \"none\": keep nothing and spill nothing")
	fs.DurationVar(&f.WorkerPoolsRefresh, "worker_pools_refresh", 10*time.Second, "how often a running job resolves its --worker_pools hosts again: a pod that joined a headless Service gets its workers mid-job, and one that left has its workers drained, then stopped; 0 resolves them only when a job starts")
	fs.Var(&f.WorkerPools, "worker_pools", "worker pools to run SDK workers on, by SDK: SDK=HOST:PORT[/WORKERS],... (WORKERS: how many the pool's host runs, default 1), e.g. python=host1:50000/2,host2:50000/2; repeat it or join SDKs with ; for several. Python environments (PROCESS, Beam's SDK image, EXTERNAL worker_pools) then run there; a host name with several addresses (a headless Service) is one pool each. See docs/scaling.md")
	return f
}

// FnAPIListen reads the --fn_api_* flags.
func (f *Flags) FnAPIListen() (fnapi.Listen, error) {
	ports, err := fnapi.ParsePortRange(f.FnAPIPorts)
	if err != nil {
		return fnapi.Listen{}, fmt.Errorf("--fn_api_ports: %w", err)
	}
	l := fnapi.Listen{Host: f.FnAPIHost, Advertise: f.FnAPIAdvertise, Ports: ports}
	if err := l.Check(); err != nil {
		return fnapi.Listen{}, fmt.Errorf("--fn_api_host/--fn_api_advertise: %w", err)
	}
	return l, nil
}

// Pools reads --worker_pools.
func (f *Flags) Pools() (placement.Pools, error) { return placement.ParsePools(f.WorkerPools...) }

// PoolRefresh is --worker_pools_refresh as workers.Options.PoolRefresh
// has it (negative: never).
func (f *Flags) PoolRefresh() time.Duration {
	if f.WorkerPoolsRefresh <= 0 {
		return -1
	}
	return f.WorkerPoolsRefresh
}

// registerScaling defines the autoscaling flags, a job's defaults: its
// options of the same names override them.
func registerScaling(fs *flag.FlagSet, s *jobs.Scaling) {
	d := jobs.DefaultScaling()
	fs.StringVar(&s.Mode, jobs.AutoscalingOption, d.Mode, "size each environment's SDK workers while a job runs: none, or ds2 (streaming: DS2 over the measured stage rates; batch: the measured remaining work; workers start and drain without a restart). See docs/scaling.md")
	fs.IntVar(&s.MinWorkers, jobs.MinWorkersOption, 0, "with --autoscaling, the least workers per environment (0: 1)")
	fs.IntVar(&s.MaxWorkers, jobs.MaxWorkersOption, 0, "with --autoscaling, the most workers per environment (0: --workers_per_environment, else the machine's cores)")
	fs.DurationVar(&s.Interval, jobs.AutoscalingIntervalOption, d.Interval, "with --autoscaling, time between two scaling decisions")
	fs.DurationVar(&s.ScaleDownInterval, jobs.ScaleDownIntervalOption, d.ScaleDownInterval, "with --autoscaling, least time between an environment's last change (or the job's start) and a scale-down")
	fs.DurationVar(&s.ScaleDownWindow, jobs.ScaleDownWindowOption, d.ScaleDownWindow, "with --autoscaling, a scale-down goes no lower than the highest need measured within this time (streaming; 0: the last decision's alone)")
	fs.DurationVar(&s.BatchTarget, jobs.BatchTargetOption, d.BatchTarget, "with --autoscaling, the time a batch job's measured remaining work is sized to finish in")
}
