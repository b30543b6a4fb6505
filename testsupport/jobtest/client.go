package jobtest

import (
	"context"
	"io"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// SubmitStaged submits a pipeline proto as Beam's PortableRunner does:
// Prepare, stage its environments' files through the staging endpoint
// the server names, Run. It returns the job id.
func SubmitStaged(t testing.TB, ctx context.Context, cli jobpb.JobServiceClient, p *pipepb.Pipeline, opts *structpb.Struct, name string) string {
	t.Helper()
	prep, err := cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, PipelineOptions: opts, JobName: name})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(prep.GetArtifactStagingEndpoint().GetUrl(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := runnerlib.StageViaPortableAPI(ctx, cc, "", prep.GetStagingSessionToken()); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJobId()
}

// Messages reads a job's message stream to its end: each message's text
// and each state, " | " between. On a stream error it returns what it
// read and the error.
func Messages(ctx context.Context, cli jobpb.JobServiceClient, id string) (string, error) {
	st, err := cli.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		return "", err
	}
	var out []string
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return strings.Join(out, " | "), nil
		}
		if err != nil {
			return strings.Join(out, " | "), err
		}
		if s := m.GetStateResponse(); s != nil {
			out = append(out, s.GetState().String())
		} else {
			out = append(out, m.GetMessageResponse().GetMessageText())
		}
	}
}
