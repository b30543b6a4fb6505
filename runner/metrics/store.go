// Package metrics aggregates the MonitoringInfos that SDK harnesses report at
// the end of each bundle into job-level results.
//
// Only final (committed) bundle values are merged: the engine calls AddBundle
// once per successful bundle, so a retried bundle is never counted twice.
package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Metric URNs merged by the store, and the type URN of each.
const (
	UrnSumInt64      = "beam:metric:user:sum_int64:v1"
	UrnSumDouble     = "beam:metric:user:sum_double:v1"
	UrnDistInt64     = "beam:metric:user:distribution_int64:v1"
	UrnDistDouble    = "beam:metric:user:distribution_double:v1"
	UrnLatestInt64   = "beam:metric:user:latest_int64:v1"
	UrnLatestDouble  = "beam:metric:user:latest_double:v1"
	UrnElementCount  = "beam:metric:element_count:v1"
	UrnSampledBytes  = "beam:metric:sampled_byte_size:v1"
	UrnSetString     = "beam:metric:user:set_string:v1"
	UrnBoundedTrie   = "beam:metric:user:bounded_trie:v1"
	typeSumInt64     = "beam:metrics:sum_int64:v1"
	typeSumDouble    = "beam:metrics:sum_double:v1"
	typeDistInt64    = "beam:metrics:distribution_int64:v1"
	typeDistDouble   = "beam:metrics:distribution_double:v1"
	typeLatestInt64  = "beam:metrics:latest_int64:v1"
	typeLatestDouble = "beam:metrics:latest_double:v1"
	typeSetString    = "beam:metrics:set_string:v1"
	typeBoundedTrie  = "beam:metrics:bounded_trie:v1"
)

// kindOf maps a metric URN to its payload kind; URNs not listed are ignored.
var kindOf = map[string]kind{
	UrnSumInt64:     kindSumInt64,
	UrnSumDouble:    kindSumDouble,
	UrnDistInt64:    kindDistInt64,
	UrnDistDouble:   kindDistDouble,
	UrnLatestInt64:  kindLatestInt64,
	UrnLatestDouble: kindLatestDouble,
	UrnElementCount: kindSumInt64,
	UrnSampledBytes: kindDistInt64,
	UrnSetString:    kindSetString,
	UrnBoundedTrie:  kindBoundedTrie,
}

// Store accumulates metrics across bundles. The zero value is not usable;
// call NewStore. Safe for concurrent use.
type Store struct {
	mu struct {
		sync.Mutex
		entries map[string]*entry // by key(urn, labels)
	}
}

type entry struct {
	urn    string
	labels map[string]string
	val    value
}

// NewStore returns an empty store.
func NewStore() *Store {
	s := &Store{}
	s.mu.entries = map[string]*entry{}
	return s
}

// AddBundle merges one finished bundle's final MonitoringInfos. Unknown URNs
// and payloads that do not decode are skipped: a misbehaving SDK must not be
// able to corrupt or crash the job's metrics.
func (s *Store) AddBundle(infos []*pipepb.MonitoringInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, mi := range infos {
		k, ok := kindOf[mi.GetUrn()]
		if !ok {
			continue
		}
		v, err := decode(k, mi.GetPayload())
		if err != nil {
			continue
		}
		s.mergeLocked(mi, v)
	}
}

func (s *Store) mergeLocked(mi *pipepb.MonitoringInfo, v value) {
	key := keyOf(mi.GetUrn(), mi.GetLabels())
	e, ok := s.mu.entries[key]
	if !ok {
		s.mu.entries[key] = &entry{urn: mi.GetUrn(), labels: copyLabels(mi.GetLabels()), val: v}
		return
	}
	e.val = merge(e.val, v)
}

// Results returns the merged metrics, sorted by URN then labels so that
// callers (and tests) see a deterministic order.
func (s *Store) Results() []*pipepb.MonitoringInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Sorted(maps.Keys(s.mu.entries))
	out := make([]*pipepb.MonitoringInfo, 0, len(keys))
	for _, k := range keys {
		e := s.mu.entries[k]
		out = append(out, &pipepb.MonitoringInfo{
			Urn:     e.urn,
			Type:    e.val.kind.typeUrn(),
			Payload: encode(e.val),
			Labels:  copyLabels(e.labels),
		})
	}
	return out
}

// keyOf identifies a metric by URN and its full label set. Labels are sorted
// so map iteration order cannot split one metric into two.
func keyOf(urn string, labels map[string]string) string {
	names := slices.Sorted(maps.Keys(labels))
	var b strings.Builder
	b.WriteString(urn)
	for _, n := range names {
		// \x00 cannot appear in a URN or label, so keys cannot collide.
		b.WriteString("\x00" + n + "\x00" + labels[n])
	}
	return b.String()
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
