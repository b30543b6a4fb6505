package harness

import (
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

func TestFirstResidualOfTheBundlesInput(t *testing.T) {
	cs := func(id string, first int64) *fnpb.ProcessBundleSplitResponse_ChannelSplit {
		return &fnpb.ProcessBundleSplitResponse_ChannelSplit{TransformId: id, LastPrimaryElement: first - 1, FirstResidualElement: first}
	}
	for _, tc := range []struct {
		name   string
		splits []*fnpb.ProcessBundleSplitResponse_ChannelSplit
		want   int64
		err    string
	}{
		{"none", nil, -1, ""},
		{"named", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("s2/source", 500)}, 500, ""},
		// Java's harness 2.73 answers a split this way.
		{"unnamed", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("", 500)}, 500, ""},
		{"another input", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("s9/source", 500)}, -1, `input "s9/source"`},
		{"unnamed among others", []*fnpb.ProcessBundleSplitResponse_ChannelSplit{cs("s2/source", 5), cs("", 7)}, -1, `input ""`},
	} {
		got, err := firstResidual(tc.splits, "s2/source")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want one containing %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}
