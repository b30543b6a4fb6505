package harness

import (
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

func TestChannelSplit(t *testing.T) {
	cs := func(id string, first int64) *fnpb.ProcessBundleSplitResponse_ChannelSplit {
		return &fnpb.ProcessBundleSplitResponse_ChannelSplit{TransformId: id, LastPrimaryElement: first - 1, FirstResidualElement: first}
	}
	for _, tc := range []struct {
		name string
		css  []*fnpb.ProcessBundleSplitResponse_ChannelSplit
		want int64
	}{
		{"none", nil, -1},
		{"the source's", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("src", 4)}, 4},
		{"another transform's", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("other", 4)}, -1},
		// Java's harness leaves transform_id unset.
		{"unnamed, as Java reports it", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("", 3)}, 3},
		{"named wins over unnamed", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("", 3), cs("src", 5)}, 5},
	} {
		if got := channelSplit(tc.css, "src"); got != tc.want {
			t.Errorf("%s: channelSplit = %d, want %d", tc.name, got, tc.want)
		}
	}
}
