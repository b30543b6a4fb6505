package jobs

import (
	"maps"
	"slices"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Read-only views of jobs for operators' tools (the web UI, /metrics),
// taken from the same records the Job API serves.

// Summary is one job as a job list shows it.
type Summary struct {
	ID    string    `json:"id"`
	Name  string    `json:"name"`
	State string    `json:"state"`
	Start time.Time `json:"start"`        // when Run accepted it
	End   time.Time `json:"end,omitzero"` // when it reached a terminal state
	// Environments are the kinds of the pipeline's environments, e.g.
	// "external" for LOOPBACK, "process", "docker".
	Environments []string `json:"environments"`
}

// Detail is everything known about one job.
type Detail struct {
	Summary
	Options map[string]any           `json:"options"`
	Stats   StatsSnapshot            `json:"stats"`
	Metrics []*pipepb.MonitoringInfo `json:"-"`
	// Names maps transform and PCollection ids to their unique names.
	Names map[string]string `json:"names"`
	// Producers maps PCollection ids to the unique name of the leaf
	// transform that outputs them (Go SDK PCollection names say little).
	Producers map[string]string `json:"producers"`
}

// Event is one entry of a job's message stream: a message or a state change.
type Event struct {
	Index      int       `json:"index"`
	Time       time.Time `json:"time"`
	State      string    `json:"state,omitempty"`
	Importance string    `json:"importance,omitempty"` // DEBUG, DETAILED, BASIC, WARNING, ERROR
	Text       string    `json:"text,omitempty"`
}

// Summaries lists every job, in id order.
func (s *Service) Summaries() []Summary {
	recs := s.sortedJobs()
	out := make([]Summary, len(recs))
	for i, r := range recs {
		out[i] = r.summary()
	}
	return out
}

// Detail describes one job; the error is NotFound for an unknown id.
func (s *Service) Detail(jobID string) (Detail, error) {
	r, err := s.lookup(jobID)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{
		Summary:   r.summary(),
		Options:   r.job.Options.AsMap(),
		Stats:     r.job.Stats().Snapshot(),
		Metrics:   r.currentMetrics(),
		Names:     map[string]string{},
		Producers: map[string]string{},
	}
	comps := r.job.Pipeline.GetComponents()
	for id, t := range comps.GetTransforms() {
		d.Names[id] = t.GetUniqueName()
	}
	for _, t := range comps.GetTransforms() {
		if len(t.GetSubtransforms()) > 0 {
			continue
		}
		for _, pc := range t.GetOutputs() {
			d.Producers[pc] = t.GetUniqueName()
		}
	}
	for id, pc := range comps.GetPcollections() {
		d.Names[id] = pc.GetUniqueName()
	}
	return d, nil
}

// Events returns the job's message stream from index from on.
func (s *Service) Events(jobID string, from int) ([]Event, error) {
	r, err := s.lookup(jobID)
	if err != nil {
		return nil, err
	}
	evs, _, _ := r.since(min(max(from, 0), r.logLen()))
	out := make([]Event, len(evs))
	for i, ev := range evs {
		e := Event{Index: from + i}
		if st := ev.GetStateResponse(); st != nil {
			e.Time, e.State = st.GetTimestamp().AsTime(), st.GetState().String()
		} else if m := ev.GetMessageResponse(); m != nil {
			e.Time, _ = time.Parse(time.RFC3339Nano, m.GetTime())
			e.Importance = strings.TrimPrefix(m.GetImportance().String(), "JOB_MESSAGE_")
			e.Text = m.GetMessageText()
		}
		out[i] = e
	}
	return out, nil
}

func (r *record) logLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.log)
}

// summary reads start and end from the logged state changes.
func (r *record) summary() Summary {
	r.mu.Lock()
	sum := Summary{ID: r.job.ID, Name: r.job.Name, State: r.mu.state.String()}
	for _, ev := range r.mu.log {
		st := ev.GetStateResponse()
		switch {
		case st == nil:
		case st.GetState() == jobpb.JobState_STOPPED && sum.Start.IsZero():
			sum.Start = st.GetTimestamp().AsTime()
		case isTerminal(st.GetState()):
			sum.End = st.GetTimestamp().AsTime()
		}
	}
	r.mu.Unlock()
	sum.Environments = envKinds(r.job.Pipeline)
	return sum
}

// envKinds names each distinct environment kind of a pipeline, sorted.
func envKinds(p *pipepb.Pipeline) []string {
	set := map[string]bool{}
	for _, env := range p.GetComponents().GetEnvironments() {
		urn := env.GetUrn() // e.g. beam:env:external:v1
		if parts := strings.Split(urn, ":"); len(parts) == 4 {
			urn = parts[2]
		}
		if urn != "" {
			set[urn] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
