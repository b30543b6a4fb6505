package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Operator commands: each talks to a running job server through the Job
// API, prints for people by default and JSON with --json, and returns the
// process exit code (0 ok, 1 failed, 2 bad usage).

type command struct {
	name  string
	usage string // after "beam-runner NAME"
	args  int    // positional arguments wanted
	opt   int    // and optional ones after them
	run   func(ctx context.Context, c *opCtx) error
	flags func(fs *flag.FlagSet)
}

// opCtx is what a command runs with.
type opCtx struct {
	client jobpb.JobServiceClient
	conn   grpc.ClientConnInterface // for beam-runner's own RPCs
	args   []string
	out    io.Writer
	json   bool
	fs     *flag.FlagSet
}

var commands = map[string]*command{}

func init() {
	for _, c := range []*command{
		{name: "jobs", usage: "", run: listJobs},
		{name: "status", usage: "JOB_ID", args: 1, run: jobStatus},
		{name: "logs", usage: "[-f] JOB_ID", args: 1, run: jobLogs, flags: func(fs *flag.FlagSet) {
			fs.Bool("f", false, "follow: keep printing messages until the job ends")
		}},
		{name: "cancel", usage: "[--wait] [--savepoint] [--savepoint_dir=DIR] JOB_ID", args: 1, run: cancelJob, flags: stopFlags},
		{name: "drain", usage: "[--wait] [--savepoint] [--savepoint_dir=DIR] JOB_ID", args: 1, run: drainJob, flags: stopFlags},
		{name: "savepoint", usage: "JOB_ID [DIR]", args: 1, opt: 1, run: savepointJob},
	} {
		commands[c.name] = c
	}
}

func waitFlag(fs *flag.FlagSet) {
	fs.Bool("wait", false, "wait until the job has ended (within --timeout)")
}

// runCommand runs operator command name with args; ok is false if there is
// no such command.
func runCommand(name string, args []string, out io.Writer) (code int, ok bool) {
	c := commands[name]
	if c == nil {
		return 0, false
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	endpoint := fs.String("endpoint", "localhost:8073", "job service endpoint")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit for the command (logs -f: none unless set)")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	if c.flags != nil {
		c.flags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: beam-runner %s [--endpoint=host:port] [--json] %s\n", name, c.usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, true
	}
	if fs.NArg() < c.args || fs.NArg() > c.args+c.opt {
		fs.Usage()
		return 2, true
	}
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(out, "beam-runner %s: %v\n", name, err)
		return 1, true
	}
	defer conn.Close()
	ctx := context.Background()
	if following := name == "logs" && flagBool(fs, "f"); !following || isSet(fs, "timeout") {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	oc := &opCtx{client: jobpb.NewJobServiceClient(conn), conn: conn, args: fs.Args(), out: out, json: *asJSON, fs: fs}
	if err := c.run(ctx, oc); err != nil {
		target := *endpoint
		if len(oc.args) > 0 {
			target = fmt.Sprintf("job %s at %s", oc.args[0], *endpoint)
		}
		fmt.Fprintf(out, "beam-runner %s: %s: %v\n", name, target, err)
		return 1, true
	}
	return 0, true
}

func flagBool(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (c *opCtx) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type jobJSON struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

func listJobs(ctx context.Context, c *opCtx) error {
	resp, err := c.client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		return err
	}
	list := []jobJSON{}
	for _, j := range resp.GetJobInfo() {
		list = append(list, jobJSON{ID: j.GetJobId(), Name: j.GetJobName(), State: j.GetState().String()})
	}
	if c.json {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.out, "no jobs")
		return nil
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE")
	for _, j := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", j.ID, j.Name, j.State)
	}
	return tw.Flush()
}

type statusJSON struct {
	ID    string    `json:"id"`
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// PCollections counts elements per PCollection unique name.
	PCollections map[string]int64  `json:"pcollections"`
	UserMetrics  []metrics.Reading `json:"user_metrics"`
}

func jobStatus(ctx context.Context, c *opCtx) error {
	id := c.args[0]
	st, err := c.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
	if err != nil {
		return err
	}
	m, err := c.client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		return err
	}
	p, err := c.client.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: id})
	if err != nil {
		return err
	}
	names := p.GetPipeline().GetComponents()
	s := statusJSON{ID: id, State: st.GetState().String(), Since: st.GetTimestamp().AsTime(), PCollections: map[string]int64{}, UserMetrics: []metrics.Reading{}}
	for _, mi := range m.GetMetrics().GetCommitted() {
		r, err := metrics.Read(mi)
		if err != nil {
			continue
		}
		switch {
		case r.URN == metrics.UrnElementCount:
			pc := r.Labels["PCOLLECTION"]
			if n := names.GetPcollections()[pc].GetUniqueName(); n != "" {
				pc = n
			}
			s.PCollections[pc] += int64(r.Value)
		case r.Labels["NAME"] != "":
			s.UserMetrics = append(s.UserMetrics, r)
		}
	}
	if c.json {
		return c.printJSON(s)
	}
	fmt.Fprintf(c.out, "job %s: %s since %s\n", id, s.State, s.Since.Local().Format(time.DateTime))
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	if len(s.PCollections) > 0 {
		fmt.Fprintln(tw, "\nPCOLLECTION\tELEMENTS")
		for _, pc := range slices.Sorted(maps.Keys(s.PCollections)) {
			fmt.Fprintf(tw, "%s\t%d\n", pc, s.PCollections[pc])
		}
	}
	if len(s.UserMetrics) > 0 {
		fmt.Fprintln(tw, "\nMETRIC\tTYPE\tVALUE")
		for _, r := range s.UserMetrics {
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\n", r.Labels["NAMESPACE"], r.Labels["NAME"], r.Type, readingValue(r))
		}
	}
	return tw.Flush()
}

func readingValue(r metrics.Reading) string {
	if r.Type == "distribution" {
		return fmt.Sprintf("count=%g sum=%g min=%g max=%g", r.Count, r.Sum, r.Min, r.Max)
	}
	return fmt.Sprintf("%g", r.Value)
}

// replayGap ends `logs` without -f: the server replays a job's messages at
// once, so a pause this long means the replay is over.
const replayGap = 300 * time.Millisecond

type logJSON struct {
	Time       string `json:"time"`
	State      string `json:"state,omitempty"`
	Importance string `json:"importance,omitempty"`
	Text       string `json:"text,omitempty"`
}

func jobLogs(ctx context.Context, c *opCtx) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: c.args[0]})
	if err != nil {
		return err
	}
	follow := flagBool(c.fs, "f")
	msgs := make(chan *jobpb.JobMessagesResponse)
	errc := make(chan error, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	enc := json.NewEncoder(c.out)
	for {
		var gap <-chan time.Time
		if !follow {
			gap = time.After(replayGap)
		}
		select {
		case m := <-msgs:
			if err := c.printLog(enc, m); err != nil {
				return err
			}
		case err := <-errc:
			if errors.Is(err, io.EOF) {
				return nil // the job ended
			}
			return err
		case <-gap:
			return nil
		}
	}
}

func (c *opCtx) printLog(enc *json.Encoder, m *jobpb.JobMessagesResponse) error {
	var l logJSON
	if st := m.GetStateResponse(); st != nil {
		l = logJSON{Time: st.GetTimestamp().AsTime().Format(time.RFC3339Nano), State: st.GetState().String()}
	} else if msg := m.GetMessageResponse(); msg != nil {
		l = logJSON{Time: msg.GetTime(), Importance: strings.TrimPrefix(msg.GetImportance().String(), "JOB_MESSAGE_"), Text: msg.GetMessageText()}
	}
	if c.json {
		return enc.Encode(l) // one object per line, as it arrives
	}
	t := l.Time
	if ts, err := time.Parse(time.RFC3339Nano, l.Time); err == nil {
		t = ts.Local().Format("15:04:05.000")
	}
	if l.State != "" {
		_, err := fmt.Fprintf(c.out, "%s state    %s\n", t, l.State)
		return err
	}
	_, err := fmt.Fprintf(c.out, "%s %-8s %s\n", t, l.Importance, l.Text)
	return err
}

func cancelJob(ctx context.Context, c *opCtx) error {
	if c.wantsSavepoint() {
		return c.savepointThen(ctx, jobs.ThenCancel)
	}
	resp, err := c.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: c.args[0]})
	if err != nil {
		return err
	}
	return c.reportState(ctx, resp.GetState())
}

func drainJob(ctx context.Context, c *opCtx) error {
	if c.wantsSavepoint() {
		return c.savepointThen(ctx, jobs.ThenDrain)
	}
	resp, err := c.client.Drain(ctx, &jobpb.DrainJobRequest{JobId: c.args[0]})
	if err != nil {
		return err
	}
	return c.reportState(ctx, resp.GetState())
}

// reportState prints the job's state, after waiting for its end if --wait.
func (c *opCtx) reportState(ctx context.Context, st jobpb.JobState_Enum) error {
	id := c.args[0]
	if flagBool(c.fs, "wait") {
		var err error
		if st, err = c.awaitEnd(ctx, id); err != nil {
			return err
		}
	}
	if c.json {
		return c.printJSON(jobJSON{ID: id, State: st.String()})
	}
	_, err := fmt.Fprintf(c.out, "job %s: %v\n", id, st)
	return err
}

func (c *opCtx) awaitEnd(ctx context.Context, id string) (jobpb.JobState_Enum, error) {
	for {
		ev, err := c.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil {
			return 0, err
		}
		switch s := ev.GetState(); s {
		case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
			return s, nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return 0, fmt.Errorf("job not ended: %w", ctx.Err())
		}
	}
}
