package jobs

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// The savepoint RPC is beam-runner's own, beside the Job API, which has
// none: a unary method whose request and response are
// google.protobuf.Struct, so it needs no generated code. Request fields:
// job_id, dir (absolute, on the server's machine; empty: under its
// state dir) and then ("", "cancel" or "drain"). Response: dir,
// sequence, state.
const (
	SavepointService = "beamrunner.v1.Savepoints"
	SavepointMethod  = "/" + SavepointService + "/Savepoint"
)

// savepointServer is what the service descriptor's handler calls.
type savepointServer interface {
	savepointRPC(ctx context.Context, req *structpb.Struct) (*structpb.Struct, error)
}

var savepointDesc = grpc.ServiceDesc{
	ServiceName: SavepointService,
	HandlerType: (*savepointServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Savepoint",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := &structpb.Struct{}
			if err := dec(req); err != nil {
				return nil, err
			}
			return srv.(savepointServer).savepointRPC(ctx, req)
		},
	}},
	Metadata: "runner/jobs/savepoint_rpc.go",
}

// RegisterSavepoints serves the savepoint RPC of svc on reg.
func RegisterSavepoints(reg grpc.ServiceRegistrar, svc *Service) {
	reg.RegisterService(&savepointDesc, svc)
}

func (s *Service) savepointRPC(ctx context.Context, req *structpb.Struct) (*structpb.Struct, error) {
	f := req.GetFields()
	then := Then(f["then"].GetStringValue())
	switch then {
	case KeepRunning, ThenCancel, ThenDrain:
	default:
		return nil, invalidArg("savepoint: then %q: want \"\", \"cancel\" or \"drain\"", then)
	}
	res, err := s.Savepoint(ctx, f["job_id"].GetStringValue(), f["dir"].GetStringValue(), then)
	if err != nil {
		return nil, err
	}
	return structpb.NewStruct(map[string]any{
		"dir": res.Dir, "sequence": float64(res.Sequence), "state": res.State.String(),
	})
}
