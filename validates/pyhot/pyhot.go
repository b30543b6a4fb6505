// Package pyhot judges the Python hot-key check: hotkey_pipeline.py groups
// one key's values under a --memory_limit, and its summary line must match
// the one computed here from the same rule, with the values read as a
// state-backed iterable and the server's peak RSS within a bound.
package pyhot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Script is the pipeline, from the repository root.
const Script = "validates/pyhot/hotkey_pipeline.py"

// HotKey is the one key the pipeline groups by.
const HotKey = "hot"

// stateBackedType is the Python SDK's type for an iterable whose tail it
// reads over the State API (apache_beam/coders/coder_impl.py).
const stateBackedType = "_ConcatSequence"

// Summary is the pipeline's output line.
type Summary struct {
	Key      string
	Count    int64
	Bytes    int64
	CRC32Sum uint64
	Iterable string // Python type of the grouped values
}

func (s Summary) String() string {
	return fmt.Sprintf("key=%s count=%d bytes=%d crc32sum=%d iterable=%s", s.Key, s.Count, s.Bytes, s.CRC32Sum, s.Iterable)
}

// Value is value i as the pipeline generates it: i as 8 big-endian bytes,
// repeated to size bytes.
func Value(dst []byte, i uint64, size int) []byte {
	dst = dst[:0]
	for len(dst) < size {
		dst = binary.BigEndian.AppendUint64(dst, i)
	}
	return dst[:size]
}

// Expected is the summary of n values of size bytes, computed here rather
// than by the pipeline; Iterable is left for Judge.
func Expected(n int64, size int) Summary {
	s := Summary{Key: HotKey, Count: n, Bytes: n * int64(size)}
	buf := make([]byte, 0, size+8)
	for i := range n {
		buf = Value(buf, uint64(i), size)
		s.CRC32Sum += uint64(crc32.ChecksumIEEE(buf))
	}
	return s
}

// Parse reads a summary line.
func Parse(line string) (Summary, error) {
	var s Summary
	fields := strings.Fields(line)
	if len(fields) != 5 {
		return s, fmt.Errorf("summary %q: want 5 fields key= count= bytes= crc32sum= iterable=", line)
	}
	vals := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return s, fmt.Errorf("summary %q: field %q is not name=value", line, f)
		}
		vals[k] = v
	}
	s.Key, s.Iterable = vals["key"], vals["iterable"]
	var err error
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"count", &s.Count}, {"bytes", &s.Bytes}} {
		if *f.dst, err = strconv.ParseInt(vals[f.name], 10, 64); err != nil {
			return s, fmt.Errorf("summary %q: %s: %v", line, f.name, err)
		}
	}
	if s.CRC32Sum, err = strconv.ParseUint(vals["crc32sum"], 10, 64); err != nil {
		return s, fmt.Errorf("summary %q: crc32sum: %v", line, err)
	}
	return s, nil
}

// Judge fails unless got has want's key, count, bytes and checksum, the
// values reached the SDK as a state-backed iterable, and the server's
// peak RSS (KiB) is at most maxKiB.
func Judge(got, want Summary, peakKiB, maxKiB int64) error {
	want.Iterable = got.Iterable
	if got != want {
		return fmt.Errorf("pipeline summary %q, want %q", got, want)
	}
	if got.Iterable != stateBackedType {
		return fmt.Errorf("the grouped values reached Python as %s, want a state-backed %s: the runner sent the hot key inline",
			got.Iterable, stateBackedType)
	}
	if peakKiB > maxKiB {
		return fmt.Errorf("server peak RSS %d MiB, want at most %d MiB", peakKiB>>10, maxKiB>>10)
	}
	return nil
}
