package jobs

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestStreamBundleTime(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want time.Duration
		err  string
	}{
		{opts: nil, want: time.Second},
		{opts: map[string]any{"beam:option:streaming_bundle_time:v1": "250ms"}, want: 250 * time.Millisecond},
		{opts: map[string]any{"streaming_bundle_time": 0.5}, want: 500 * time.Millisecond},
		{opts: map[string]any{"streaming_bundle_time": "1ms"}, err: "streaming_bundle_time: want a duration from 10ms to 1m, got 1ms"},
		{opts: map[string]any{"streaming_bundle_time": "often"}, err: "streaming_bundle_time: want a duration such as"},
	} {
		opts, err := structpb.NewStruct(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := StreamBundleTime(opts)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one with %q", c.opts, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%v: got %v, %v; want %v", c.opts, got, err, c.want)
		}
	}
}
