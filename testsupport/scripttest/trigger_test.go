package scripttest

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func TestParseTriggerTimestampTransforms(t *testing.T) {
	got, err := ParseTrigger("Repeatedly(AfterProcessingTime(10,AlignTo(1000,3),5))")
	if err != nil {
		t.Fatal(err)
	}
	delay := func(ms int64) *pipepb.TimestampTransform {
		return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: ms}}}
	}
	align := &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_AlignTo_{AlignTo: &pipepb.TimestampTransform_AlignTo{Period: 1000, Offset: 3}}}
	pt := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{delay(10), align, delay(5)}}}}
	want := &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: pt}}}
	if !proto.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	sync, err := ParseTrigger("AfterSynchronizedProcessingTime")
	if err != nil || sync.GetAfterSynchronizedProcessingTime() == nil {
		t.Errorf("AfterSynchronizedProcessingTime: %v, %v", sync, err)
	}
}

func TestParseTriggerMistakes(t *testing.T) {
	for _, s := range []string{"", "Bogus", "AfterCount(", "AfterCount(1,2)", "AfterProcessingTime(Never)",
		"AfterProcessingTime(AlignTo(1))", "AfterProcessingTime(AlignTo(Never,1))", "AfterSynchronizedProcessingTime(1)",
		"AfterWatermark(soon=Never)", "Repeatedly(1)", "AfterAll()", "Never)"} {
		if tr, err := ParseTrigger(s); err == nil {
			t.Errorf("%q parsed as %v", s, tr)
		}
	}
}
