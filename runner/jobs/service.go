package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/artifacts"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"
)

// Drainer is an optional Executor capability: stop reading sources and let
// in-flight data finish. Found by type assertion.
type Drainer interface {
	Drain(jobID string) error
}

// DefaultPrepareTTL is how long a preparation waits for Run before it is
// dropped with its staged files.
const DefaultPrepareTTL = 10 * time.Minute

// Options configure a Service.
type Options struct {
	Executor Executor
	Staging  *artifacts.Staging // where Prepare registers staging sessions
	// StagingEndpoint returns the artifact staging address given to clients;
	// a func because the server knows its port only once it listens.
	StagingEndpoint func() string
	ArtifactRoot    string        // per-job directories go here; default a fresh private one (artifacts.NewRoot), removed at Close
	PrepareTTL      time.Duration // default DefaultPrepareTTL
	Logger          *slog.Logger
	// MaxPreparedBytes caps the pipeline bytes held for prepared jobs not
	// yet run: a Prepare past it gets RESOURCE_EXHAUSTED. 0 means
	// DefaultMaxPreparedBytes; negative means no cap.
	MaxPreparedBytes int64
	// Store keeps job records across restarts; nil keeps them in memory.
	// The caller opens and closes it (after Close).
	Store *store.Store
	// MaxFinishedJobs caps the ended jobs kept (listed, answered for, and
	// saved): past it the oldest are forgotten. 0 means
	// DefaultMaxFinishedJobs; negative means no cap.
	MaxFinishedJobs int
}

// DefaultMaxPreparedBytes is the default cap on prepared pipelines' bytes.
const DefaultMaxPreparedBytes = 512 << 20

// Service implements jobpb.JobServiceServer. Jobs run independently, each
// in its own goroutine with its own cancellable context.
type Service struct {
	jobpb.UnimplementedJobServiceServer

	opts     Options
	log      *slog.Logger
	baseCtx  context.Context // parent of every job's context
	stopJobs context.CancelFunc
	wg       sync.WaitGroup // running jobs and the janitor

	mu struct {
		sync.Mutex
		prepared  map[string]*preparation // by preparation id
		jobs      map[string]*record      // by job id
		finished  []string                // ended jobs' ids, oldest end first (retain.go)
		running   int
		idleSince time.Time // zero while anything is prepared or running
		// preparedBytes sums the pipeline sizes of prepared.
		preparedBytes int64
	}
	ownRoot bool // the artifact root was created here, removed at Close
}

// preparation is a prepared job waiting for Run.
type preparation struct {
	id       string
	name     string
	pipeline *pipepb.Pipeline
	options  *structpb.Struct
	dir      string
	created  time.Time
	size     int64  // bytes of the pipeline, counted against the cap
	prepared any    // what the executor's Plan built (Job.Prepared)
	resume   []byte // the savepoint's checkpoint it starts from (Job.Resume)
	from     string // and its directory (Job.Savepoint)
	updates  string // the running job it replaces (--update)
}

// NewService returns a Service and starts its janitor, which drops
// preparations that were never run. Call Close to stop it.
func NewService(opts Options) *Service {
	ownRoot := false
	if opts.ArtifactRoot == "" {
		root, err := artifacts.NewRoot()
		if err != nil {
			// Still private: a per-process directory, made on first use.
			root = filepath.Join(os.TempDir(), fmt.Sprintf("beam-runner-artifacts-%d", os.Getpid()))
		}
		opts.ArtifactRoot, ownRoot = root, true
	}
	if opts.MaxPreparedBytes == 0 {
		opts.MaxPreparedBytes = DefaultMaxPreparedBytes
	}
	if opts.PrepareTTL <= 0 {
		opts.PrepareTTL = DefaultPrepareTTL
	}
	if opts.Staging == nil {
		opts.Staging = artifacts.NewStaging()
	}
	if opts.StagingEndpoint == nil {
		opts.StagingEndpoint = func() string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{opts: opts, log: opts.Logger, ownRoot: ownRoot}
	s.baseCtx, s.stopJobs = context.WithCancel(context.Background())
	s.mu.prepared = map[string]*preparation{}
	s.mu.jobs = map[string]*record{}
	s.mu.idleSince = time.Now()
	if opts.Store != nil {
		s.restore()
	}
	s.wg.Add(1)
	go s.janitor()
	return s
}

// StoreUsage is the durable store's size on disk; ok is false when the
// service keeps its records in memory.
func (s *Service) StoreUsage() (u store.Usage, ok bool, err error) {
	if s.opts.Store == nil {
		return u, false, nil
	}
	u, err = s.opts.Store.Usage()
	return u, true, err
}

// Staging returns the staging service that must be served beside this one.
func (s *Service) Staging() *artifacts.Staging { return s.opts.Staging }

// IdleSince reports since when no job has been prepared or running; ok is
// false while there is work.
func (s *Service) IdleSince() (since time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.idleSince, !s.mu.idleSince.IsZero()
}

// updateIdleLocked keeps idleSince in step with the prepared/running counts.
func (s *Service) updateIdleLocked() {
	busy := len(s.mu.prepared) > 0 || s.mu.running > 0
	switch {
	case busy:
		s.mu.idleSince = time.Time{}
	case s.mu.idleSince.IsZero():
		s.mu.idleSince = time.Now()
	}
}

// Close cancels every running job and waits, until ctx expires, for their
// Execute calls to return.
func (s *Service) Close(ctx context.Context) error {
	s.stopJobs()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		if s.ownRoot {
			os.RemoveAll(s.opts.ArtifactRoot)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("jobs still running at shutdown: %w", ctx.Err())
	}
}

func (s *Service) lookup(jobID string) (*record, error) {
	if jobID == "" {
		return nil, invalidArg("job_id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.jobs[jobID]
	if !ok {
		return nil, notFound("no job with id %q", jobID)
	}
	return r, nil
}

func (s *Service) sortedJobs() []*record {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.mu.jobs))
	out := make([]*record, len(ids))
	for i, id := range ids {
		out[i] = s.mu.jobs[id]
	}
	return out
}

// newID returns a readable, unique job id: the job name (if any) plus a
// random suffix.
func newID(name string) string {
	id := uuid.NewString()[:8]
	if name = sanitize(name); name != "" {
		return name + "-" + id
	}
	return "job-" + id
}

// sanitize keeps ids safe as directory names.
func sanitize(name string) string {
	b := []byte(name)
	n := 0
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b[n] = c
			n++
		}
		if n == 40 {
			break
		}
	}
	return string(b[:n])
}
