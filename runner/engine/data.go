package engine

import "github.com/beam-runner/beam-runner/runner/coders"

// paneChunkBytes is the size of the chunks GBK output is encoded into: at
// most a data-plane frame, so bundles are cut into frames without parsing.
const paneChunkBytes = 1 << 20

// Data is a materialised PCollection: encoded windowed values, as chunks
// that each hold whole elements.
type Data struct {
	Chunks [][]byte
	Bytes  int
}

// Add appends a chunk of whole elements.
func (d *Data) Add(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	d.Chunks = append(d.Chunks, chunk)
	d.Bytes += len(chunk)
}

// AddAll appends another PCollection's chunks without copying them.
func (d *Data) AddAll(o *Data) {
	for _, c := range o.Chunks {
		d.Add(c)
	}
}

// Impulse is the single element an impulse emits: an empty byte array in
// the global window at the minimum timestamp.
func Impulse() *Data {
	d := &Data{}
	d.Add(coders.AppendWindowedValue(nil, coders.MinTimestamp, 1, nil, coders.NoFiringPane, []byte{0}))
	return d
}
