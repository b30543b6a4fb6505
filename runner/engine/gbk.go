package engine

import (
	"fmt"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// GroupSpec says how to group one PCollection.
type GroupSpec struct {
	In  *coders.WindowedValueCodec // KV elements
	Key *coders.Codec              // the KV's key coder
	// Merging is set for session windows: windows of a key that overlap
	// merge into one.
	Merging bool
	// OutputTime picks each group's timestamp.
	OutputTime pipepb.OutputTime_Enum
	// Global is set when the window is the global window.
	Global bool
}

// onTimePane is the pane of the single firing a bounded input gets.
var onTimePane = coders.PaneInfo{IsFirst: true, IsLast: true, Timing: coders.TimingOnTime}

type group struct {
	key, window []byte
	values      [][]byte
	size        int
	minTS       int64
	maxTS       int64
}

func (g *group) add(value []byte, ts int64) {
	if len(g.values) == 0 || ts < g.minTS {
		g.minTS = ts
	}
	if len(g.values) == 0 || ts > g.maxTS {
		g.maxTS = ts
	}
	g.values = append(g.values, value)
	g.size += len(value)
}

// GroupByKey groups KV elements by encoded key and window and returns
// KV(key, iterable(values)) elements, one per group, in first-seen order.
// Values are not decoded: they are copied as encoded bytes.
func GroupByKey(in *Data, spec GroupSpec) (*Data, error) {
	groups, err := collect(in, spec)
	if err != nil {
		return nil, err
	}
	if spec.Merging {
		groups, err = mergeSessions(groups)
		if err != nil {
			return nil, err
		}
	}
	return emit(groups, spec)
}

func collect(in *Data, spec GroupSpec) ([]*group, error) {
	index := map[string]*group{}
	var order []*group
	var keyBuf []byte
	err := Each(in, spec.In, func(v *coders.WindowedValue) error {
		kn, err := spec.Key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		key, value := v.Elem[:kn], v.Elem[kn:]
		return EachWindow(spec.In, v, func(win []byte) error {
			keyBuf = coders.AppendLengthPrefixed(keyBuf[:0], win)
			keyBuf = append(keyBuf, key...)
			g := index[string(keyBuf)]
			if g == nil {
				g = &group{key: key, window: win}
				index[string(keyBuf)] = g
				order = append(order, g)
			}
			g.add(value, v.Timestamp)
			return nil
		})
	})
	return order, err
}

// mergeSessions merges, per key, groups whose interval windows overlap.
func mergeSessions(groups []*group) ([]*group, error) {
	byKey := map[string][]*group{}
	var keys []string
	for _, g := range groups {
		k := string(g.key)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], g)
	}
	var out []*group
	for _, k := range keys {
		merged, err := mergeKey(byKey[k])
		if err != nil {
			return nil, err
		}
		out = append(out, merged...)
	}
	return out, nil
}

func mergeKey(gs []*group) ([]*group, error) {
	type iv struct {
		w coders.IntervalWindow
		g *group
	}
	ivs := make([]iv, len(gs))
	for i, g := range gs {
		w, _, err := coders.DecodeIntervalWindow(g.window)
		if err != nil {
			return nil, fmt.Errorf("session window: %w", err)
		}
		ivs[i] = iv{w, g}
	}
	sort.SliceStable(ivs, func(i, j int) bool { return ivs[i].w.Start < ivs[j].w.Start })
	var out []*group
	var cur *group
	var curW coders.IntervalWindow
	closeCur := func() {
		if cur != nil {
			cur.window = coders.AppendIntervalWindow(nil, curW)
			out = append(out, cur)
		}
	}
	for _, x := range ivs {
		if cur != nil && x.w.Start < curW.End {
			curW.End = max(curW.End, x.w.End)
			for i, v := range x.g.values {
				_ = i
				cur.values = append(cur.values, v)
			}
			cur.size += x.g.size
			cur.minTS, cur.maxTS = min(cur.minTS, x.g.minTS), max(cur.maxTS, x.g.maxTS)
			continue
		}
		closeCur()
		cur = &group{key: x.g.key, values: append([][]byte(nil), x.g.values...), size: x.g.size, minTS: x.g.minTS, maxTS: x.g.maxTS}
		curW = x.w
	}
	closeCur()
	return out, nil
}

func emit(groups []*group, spec GroupSpec) (*Data, error) {
	size := 0
	for _, g := range groups {
		size += len(g.key) + len(g.window) + g.size + 32
	}
	buf := make([]byte, 0, size)
	for _, g := range groups {
		ts, err := outputTime(g, spec)
		if err != nil {
			return nil, err
		}
		buf = coders.AppendWindowedValueHeader(buf, ts, 1, g.window, onTimePane)
		buf = append(buf, g.key...)
		buf = coders.AppendIterableHeader(buf, int32(len(g.values)))
		for _, v := range g.values {
			buf = append(buf, v...)
		}
	}
	out := &Data{}
	out.Add(buf)
	return out, nil
}

func outputTime(g *group, spec GroupSpec) (int64, error) {
	switch spec.OutputTime {
	case pipepb.OutputTime_EARLIEST_IN_PANE:
		return g.minTS, nil
	case pipepb.OutputTime_LATEST_IN_PANE:
		return g.maxTS, nil
	}
	if spec.Global {
		return coders.EndOfGlobalWindow, nil
	}
	w, _, err := coders.DecodeIntervalWindow(g.window)
	if err != nil {
		return 0, fmt.Errorf("window of group: %w", err)
	}
	return w.MaxTimestamp(), nil
}
