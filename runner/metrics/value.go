package metrics

import (
	"bytes"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

// kind is the payload encoding of a metric (its MonitoringInfo type URN).
type kind int

const (
	kindSumInt64 kind = iota
	kindSumDouble
	kindDistInt64
	kindDistDouble
	kindLatestInt64
	kindLatestDouble
	kindSetString
	kindBoundedTrie
)

func (k kind) typeUrn() string {
	return [...]string{typeSumInt64, typeSumDouble, typeDistInt64, typeDistDouble, typeLatestInt64, typeLatestDouble, typeSetString, typeBoundedTrie}[k]
}

// value is a decoded payload. Integer and double variants share the struct:
// ints use the i* fields, doubles the f* fields; count and ts are common.
type value struct {
	kind             kind
	count            int64
	iSum, iMin, iMax int64
	fSum, fMin, fMax float64
	ts               int64 // latest_*: milliseconds since epoch
	strs             stringSet
	trie             boundedTrie
}

// merge combines two values of one metric. Pure; a kind mismatch (an SDK
// reusing a URN with another encoding is impossible by URN) keeps a.
func merge(a, b value) value {
	if a.kind != b.kind {
		return a
	}
	switch a.kind {
	case kindSumInt64:
		a.iSum += b.iSum
	case kindSumDouble:
		a.fSum += b.fSum
	case kindDistInt64:
		a = mergeDistInt(a, b)
	case kindDistDouble:
		a = mergeDistDouble(a, b)
	case kindLatestInt64, kindLatestDouble:
		if b.ts >= a.ts { // ties go to the later bundle
			return b
		}
	case kindSetString:
		a.strs = a.strs.union(b.strs)
	case kindBoundedTrie:
		a.trie = a.trie.combine(b.trie)
	}
	return a
}

func mergeDistInt(a, b value) value {
	if b.count == 0 {
		return a
	}
	if a.count == 0 {
		return b
	}
	a.count += b.count
	a.iSum += b.iSum
	a.iMin = min(a.iMin, b.iMin)
	a.iMax = max(a.iMax, b.iMax)
	return a
}

func mergeDistDouble(a, b value) value {
	if b.count == 0 {
		return a
	}
	if a.count == 0 {
		return b
	}
	a.count += b.count
	a.fSum += b.fSum
	a.fMin = min(a.fMin, b.fMin)
	a.fMax = max(a.fMax, b.fMax)
	return a
}

// decode parses a payload per model/pipeline/v1/metrics.proto: varints are
// beam:coder:varint:v1, doubles beam:coder:double:v1 (big-endian IEEE 754).
func decode(k kind, payload []byte) (value, error) {
	r := bytes.NewReader(payload)
	v := value{kind: k}
	var err error
	switch k {
	case kindSumInt64:
		v.iSum, err = coder.DecodeVarInt(r)
	case kindSumDouble:
		v.fSum, err = coder.DecodeDouble(r)
	case kindDistInt64:
		err = readVarInts(r, &v.count, &v.iSum, &v.iMin, &v.iMax)
	case kindDistDouble:
		if err = readVarInts(r, &v.count); err == nil {
			err = readDoubles(r, &v.fSum, &v.fMin, &v.fMax)
		}
	case kindLatestInt64:
		err = readVarInts(r, &v.ts, &v.iSum)
	case kindLatestDouble:
		if err = readVarInts(r, &v.ts); err == nil {
			err = readDoubles(r, &v.fSum)
		}
	case kindSetString:
		v.strs, err = decodeStringSet(r)
	case kindBoundedTrie:
		v.trie, err = decodeBoundedTrie(payload)
	default:
		err = fmt.Errorf("unknown metric kind %d", k)
	}
	return v, err
}

func readVarInts(r *bytes.Reader, dst ...*int64) error {
	for _, d := range dst {
		x, err := coder.DecodeVarInt(r)
		if err != nil {
			return err
		}
		*d = x
	}
	return nil
}

func readDoubles(r *bytes.Reader, dst ...*float64) error {
	for _, d := range dst {
		x, err := coder.DecodeDouble(r)
		if err != nil {
			return err
		}
		*d = x
	}
	return nil
}

// encode is the inverse of decode. Writes to a bytes.Buffer cannot fail.
func encode(v value) []byte {
	var b bytes.Buffer
	ints := func(xs ...int64) {
		for _, x := range xs {
			_ = coder.EncodeVarInt(x, &b)
		}
	}
	doubles := func(xs ...float64) {
		for _, x := range xs {
			_ = coder.EncodeDouble(x, &b)
		}
	}
	switch v.kind {
	case kindSumInt64:
		ints(v.iSum)
	case kindSumDouble:
		doubles(v.fSum)
	case kindDistInt64:
		ints(v.count, v.iSum, v.iMin, v.iMax)
	case kindDistDouble:
		ints(v.count)
		doubles(v.fSum, v.fMin, v.fMax)
	case kindLatestInt64:
		ints(v.ts, v.iSum)
	case kindLatestDouble:
		ints(v.ts)
		doubles(v.fSum)
	case kindSetString:
		v.strs.encode(&b)
	case kindBoundedTrie:
		b.Write(v.trie.encode())
	}
	return b.Bytes()
}
