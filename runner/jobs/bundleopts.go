package jobs

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// StreamBundleTimeOption is how long a streaming job's source bundle
// (a splittable DoFn's, such as KafkaIO's read) runs before the runner
// checkpoints it: what it read counts downstream, and moves the
// watermark, only when its bundle commits, so this bounds the latency a
// source adds. Flink's portable runner calls it max_bundle_time_mills.
const StreamBundleTimeOption = "streaming_bundle_time"

// DefaultStreamBundleTime is Flink's portable default in streaming.
const DefaultStreamBundleTime = time.Second

// StreamBundleTime reads the job's streaming_bundle_time: a duration
// from 10 ms to 1 min, DefaultStreamBundleTime when absent.
func StreamBundleTime(opts *structpb.Struct) (time.Duration, error) {
	d := DefaultStreamBundleTime
	if err := durationOption(opts, StreamBundleTimeOption, &d); err != nil {
		return 0, err
	}
	if d < 10*time.Millisecond || d > time.Minute {
		return 0, fmt.Errorf("job option %s: want a duration from 10ms to 1m, got %v", StreamBundleTimeOption, d)
	}
	return d, nil
}
