package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"golang.org/x/sync/errgroup"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

const (
	badURN   = "beam:transform:not_a_real_urn:v1"
	parDoURN = "beam:transform:pardo:v1"
)

// checkUnsupportedURN: a leaf transform with an unknown URN is rejected at
// Prepare, naming the URN; the server then still runs a good pipeline.
func checkUnsupportedURN(ctx context.Context, s *Session) error {
	p, err := s.loopback(ctx, sumOfSquares(10))
	if err != nil {
		return err
	}
	name, err := rewriteLeafParDo(p, badURN)
	if err != nil {
		return err
	}
	_, err = s.submit(ctx, "lifecycle-unsupported-urn", p)
	switch {
	case err == nil:
		return fmt.Errorf("a pipeline with %s (transform %q) was accepted", badURN, name)
	case !strings.Contains(err.Error(), "prepare"):
		return fmt.Errorf("rejected after Prepare, want at Prepare: %v", err)
	case !strings.Contains(err.Error(), badURN):
		return fmt.Errorf("the Prepare error does not name %s: %v", badURN, err)
	}
	return s.runGood(ctx, "lifecycle-after-reject", 100)
}

// rewriteLeafParDo gives the first (by id) leaf ParDo the URN urn and
// returns its unique name.
func rewriteLeafParDo(p *pipepb.Pipeline, urn string) (string, error) {
	ts := p.GetComponents().GetTransforms()
	for _, id := range slices.Sorted(maps.Keys(ts)) {
		t := ts[id]
		if len(t.GetSubtransforms()) == 0 && t.GetSpec().GetUrn() == parDoURN {
			t.Spec.Urn = urn
			return t.GetUniqueName(), nil
		}
	}
	return "", fmt.Errorf("the pipeline has no leaf ParDo to rewrite")
}

// checkDoFnError: a DoFn's error fails the job, its text reaches the
// message stream, the worker is stopped, and the next job still runs.
func checkDoFnError(ctx context.Context, s *Session) error {
	p, err := s.loopback(ctx, failing)
	if err != nil {
		return err
	}
	mark := s.pool.startedCount()
	_, o, err := s.runJob(ctx, "lifecycle-dofn-error", p)
	if err != nil {
		return err
	}
	if err := expectState(o, jobpb.JobState_FAILED); err != nil {
		return err
	}
	if !strings.Contains(o.text(), failMarker) {
		return fmt.Errorf("the message stream does not carry the DoFn's error %q; it has:\n%s", failMarker, textclip.Clip(o.text(), 2000))
	}
	if err := s.pool.awaitStopped(mark, 10*time.Second); err != nil {
		return err
	}
	return s.runGood(ctx, "lifecycle-after-failure", 100)
}

// checkTwoJobs: two pipelines submitted at once both finish correctly.
func checkTwoJobs(ctx context.Context, s *Session) error {
	var g errgroup.Group
	for i, n := range []int{500, 1000} {
		g.Go(func() error {
			if err := s.runGood(ctx, fmt.Sprintf("lifecycle-concurrent-%d", i), n); err != nil {
				return fmt.Errorf("job %d (n=%d): %w", i, n, err)
			}
			return nil
		})
	}
	return g.Wait()
}
