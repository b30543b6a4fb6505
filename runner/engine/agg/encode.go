package agg

import "github.com/beam-runner/beam-runner/runner/coders"

// AppendPane appends p as the GroupByKey output element the runner sends
// on: a windowed value (timestamp, the one window, the pane) of
// KV(key, iterable(values)), with the key and values copied as encoded.
func AppendPane(dst []byte, p Pane) []byte {
	dst = coders.AppendWindowedValueHeader(dst, p.Timestamp, 1, p.Window, p.Info)
	dst = append(dst, p.Key...)
	dst = coders.AppendIterableHeader(dst, int32(len(p.Values)))
	for _, v := range p.Values {
		dst = append(dst, v...)
	}
	return dst
}
