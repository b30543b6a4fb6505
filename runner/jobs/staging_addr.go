package jobs

import (
	"context"
	"net"

	"google.golang.org/grpc/metadata"
)

// stagingURL is the artifact staging address a client is told: the
// address it dialed (the call's :authority), since staging is served on
// the job service's own port. A client behind a Kubernetes Service or a
// port forward then stages where it already reaches, not at the server's
// own idea of its name; without a usable authority, StagingEndpoint.
func (s *Service) stagingURL(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get(":authority"); len(a) > 0 {
		if host, port, err := net.SplitHostPort(a[0]); err == nil && host != "" && port != "" {
			return a[0]
		}
	}
	return s.opts.StagingEndpoint()
}
