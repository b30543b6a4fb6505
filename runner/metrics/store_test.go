package metrics

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func user(ptransform, name string) map[string]string {
	return map[string]string{"PTRANSFORM": ptransform, "NAMESPACE": "ns", "NAME": name}
}

func mi(t *testing.T, urn string, labels map[string]string, payload []byte, err error) *pipepb.MonitoringInfo {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return &pipepb.MonitoringInfo{Urn: urn, Labels: labels, Payload: payload}
}

func doubles(vs ...float64) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		coder.EncodeDouble(v, &b)
	}
	return b.Bytes()
}

func varints(vs ...int64) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		coder.EncodeVarInt(v, &b)
	}
	return b.Bytes()
}

func find(t *testing.T, res []*pipepb.MonitoringInfo, urn string, labels map[string]string) value {
	t.Helper()
	for _, r := range res {
		if keyOf(r.GetUrn(), r.GetLabels()) == keyOf(urn, labels) {
			v, err := decode(kindOf[urn], r.GetPayload())
			if err != nil {
				t.Fatalf("decode %v: %v", urn, err)
			}
			return v
		}
	}
	t.Fatalf("metric %v %v not in results", urn, labels)
	return value{}
}

func TestSumsAndDistributionsMergeAcrossBundles(t *testing.T) {
	s := NewStore()
	c1, err1 := metricsx.Int64Counter(3)
	c2, err2 := metricsx.Int64Counter(4)
	d1, err3 := metricsx.Int64Distribution(2, 10, 1, 9)
	d2, err4 := metricsx.Int64Distribution(3, 6, -1, 4)
	s.AddBundle([]*pipepb.MonitoringInfo{
		mi(t, UrnSumInt64, user("t1", "c"), c1, err1),
		mi(t, UrnDistInt64, user("t1", "d"), d1, err3),
		mi(t, UrnSumDouble, user("t1", "f"), doubles(1.5), nil),
		mi(t, UrnDistDouble, user("t1", "g"), append(varints(1), doubles(2, 2, 2)...), nil),
	})
	s.AddBundle([]*pipepb.MonitoringInfo{
		mi(t, UrnSumInt64, user("t1", "c"), c2, err2),
		mi(t, UrnDistInt64, user("t1", "d"), d2, err4),
		mi(t, UrnSumDouble, user("t1", "f"), doubles(2.25), nil),
		mi(t, UrnDistDouble, user("t1", "g"), append(varints(2), doubles(-1, -3, 2.5)...), nil),
		mi(t, UrnSumInt64, user("t2", "c"), c2, err2), // other transform: separate
	})
	res := s.Results()
	if got := find(t, res, UrnSumInt64, user("t1", "c")).iSum; got != 7 {
		t.Errorf("sum_int64 = %d, want 7", got)
	}
	if got := find(t, res, UrnSumInt64, user("t2", "c")).iSum; got != 4 {
		t.Errorf("t2 sum_int64 = %d, want 4", got)
	}
	d := find(t, res, UrnDistInt64, user("t1", "d"))
	if d.count != 5 || d.iSum != 16 || d.iMin != -1 || d.iMax != 9 {
		t.Errorf("distribution_int64 = %+v, want count 5 sum 16 min -1 max 9", d)
	}
	if got := find(t, res, UrnSumDouble, user("t1", "f")).fSum; got != 3.75 {
		t.Errorf("sum_double = %v, want 3.75", got)
	}
	g := find(t, res, UrnDistDouble, user("t1", "g"))
	if g.count != 3 || g.fSum != 1 || g.fMin != -3 || g.fMax != 2.5 {
		t.Errorf("distribution_double = %+v", g)
	}
}

func TestLatestKeepsNewestTimestamp(t *testing.T) {
	s := NewStore()
	now := time.UnixMilli(1_700_000_000_000)
	newer, e1 := metricsx.Int64Latest(now.Add(time.Second), 42)
	older, e2 := metricsx.Int64Latest(now, 7)
	// The newer value arrives first: arrival order must not matter.
	s.AddBundle([]*pipepb.MonitoringInfo{mi(t, UrnLatestInt64, user("t", "g"), newer, e1)})
	s.AddBundle([]*pipepb.MonitoringInfo{mi(t, UrnLatestInt64, user("t", "g"), older, e2)})
	s.AddBundle([]*pipepb.MonitoringInfo{
		mi(t, UrnLatestDouble, user("t", "h"), append(varints(5), doubles(1.5)...), nil),
		mi(t, UrnLatestDouble, user("t", "h"), append(varints(9), doubles(-2)...), nil),
	})
	if got := find(t, s.Results(), UrnLatestInt64, user("t", "g")); got.iSum != 42 {
		t.Errorf("latest_int64 = %+v, want 42", got)
	}
	if got := find(t, s.Results(), UrnLatestDouble, user("t", "h")); got.fSum != -2 || got.ts != 9 {
		t.Errorf("latest_double = %+v, want -2 at 9", got)
	}
}

func TestPCollectionMetricsAndIgnoredInput(t *testing.T) {
	s := NewStore()
	pc := map[string]string{"PCOLLECTION": "pc1"}
	n, err := metricsx.Int64Counter(10)
	sz, err2 := metricsx.Int64Distribution(1, 8, 8, 8)
	s.AddBundle([]*pipepb.MonitoringInfo{
		mi(t, UrnElementCount, pc, n, err),
		mi(t, UrnElementCount, pc, n, err),
		mi(t, UrnSampledBytes, pc, sz, err2),
		{Urn: "beam:metric:unknown:v1", Payload: []byte{1}},
		{Urn: UrnSumInt64, Labels: user("t", "bad"), Payload: nil}, // truncated
		nil,
	})
	res := s.Results()
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2 (unknown and malformed ignored): %v", len(res), res)
	}
	if got := find(t, res, UrnElementCount, pc).iSum; got != 20 {
		t.Errorf("element_count = %d, want 20", got)
	}
	if res[0].GetType() != typeSumInt64 || res[1].GetType() != typeDistInt64 {
		t.Errorf("types = %q, %q", res[0].GetType(), res[1].GetType())
	}
}

func TestResultsDeterministicAndConcurrent(t *testing.T) {
	s := NewStore()
	c, err := metricsx.Int64Counter(1)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				s.AddBundle([]*pipepb.MonitoringInfo{
					mi(t, UrnSumInt64, user("b", "c"), c, err),
					mi(t, UrnSumInt64, user("a", "c"), c, err),
				})
			}
		}()
	}
	wg.Wait()
	res := s.Results()
	if res[0].GetLabels()["PTRANSFORM"] != "a" || res[1].GetLabels()["PTRANSFORM"] != "b" {
		t.Errorf("results not sorted: %v", res)
	}
	if got := find(t, res, UrnSumInt64, user("a", "c")).iSum; got != 800 {
		t.Errorf("sum = %d, want 800", got)
	}
}
