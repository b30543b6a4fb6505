package agg

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// BenchmarkGroupedBytes measures what a GroupByKey holds per buffered
// element beyond its payload: 1M values of 10-byte keys and 90-byte values
// (as the GroupByKey load test's), added as the engine adds them, by
// reference into 1 MiB input chunks. B/elem is the live heap per element
// once they are all in; payload/elem is the key and value bytes.
func BenchmarkGroupedBytes(b *testing.B) {
	const n, keyLen, valLen = 1 << 20, 10, 90
	for range b.N {
		var chunks [][]byte
		var cur []byte
		before := liveHeap()
		g, err := New(Config{Window: coders.GlobalWindow})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if len(cur)+keyLen+valLen > cap(cur) {
				chunks = append(chunks, cur)
				cur = make([]byte, 0, 1<<20)
			}
			start := len(cur)
			cur = binary.BigEndian.AppendUint64(cur, uint64(i*7919%n))
			cur = append(cur, make([]byte, keyLen-8+valLen)...)
			kv := cur[start:]
			if err := g.AddShared(kv[:keyLen], nil, kv[keyLen:], 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		chunks, cur = nil, nil // the GBK keeps what it needs
		held := liveHeap() - before
		b.ReportMetric(float64(held)/n, "B/elem")
		b.ReportMetric(keyLen+valLen, "payload/elem")
		runtime.KeepAlive(g)
	}
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkGroupAndFire is BenchmarkGroupedBytes's input grouped and
// encoded as the GroupByKey's output: the CPU of the whole path.
func BenchmarkGroupAndFire(b *testing.B) {
	const n, keyLen, valLen = 1 << 20, 10, 90
	in := make([]byte, 0, n*(keyLen+valLen))
	for i := range n {
		in = binary.BigEndian.AppendUint64(in, uint64(i*7919%n))
		in = append(in, make([]byte, keyLen-8+valLen)...)
	}
	b.ResetTimer()
	for range b.N {
		g, err := New(Config{Window: coders.GlobalWindow})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			kv := in[i*(keyLen+valLen) : (i+1)*(keyLen+valLen)]
			if err := g.AddShared(kv[:keyLen], nil, kv[keyLen:], 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		g.AdvanceWatermark(coders.MaxTimestamp)
		out := 0
		g.FireEncodedTo(1<<20, func(c []byte) { out += len(c) })
		if out < n*(keyLen+valLen) {
			b.Fatalf("%d bytes of output", out)
		}
	}
}
