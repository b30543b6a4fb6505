package bundleio

import (
	"crypto/rand"
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// sideCacheTokens gives each side input of a stage a cache token. The SDKs
// cache side-input reads across bundles only under a token the runner
// names in the bundle's request; without one, the Go SDK re-reads a side
// input through the state API for every element. A stage's side inputs
// are complete before its first bundle and never change after, so one
// token each serves the stage's whole life. Tokens are random, so no two
// stages, jobs or servers feeding one harness's cache share one.
func sideCacheTokens(sides []plan.SideInput) ([]*fnpb.ProcessBundleRequest_CacheToken, error) {
	var out []*fnpb.ProcessBundleRequest_CacheToken
	for _, si := range sides {
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return nil, fmt.Errorf("cache token for side input %q of %q: %w", si.Tag, si.Transform, err)
		}
		out = append(out, &fnpb.ProcessBundleRequest_CacheToken{
			Token: tok,
			Type: &fnpb.ProcessBundleRequest_CacheToken_SideInput_{SideInput: &fnpb.ProcessBundleRequest_CacheToken_SideInput{
				TransformId: si.Transform, SideInputId: si.Tag,
			}},
		})
	}
	return out, nil
}
