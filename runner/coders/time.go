package coders

import (
	"encoding/binary"
	"math"
)

// Beam timestamp bounds in milliseconds. They mirror the Go SDK's
// mtime.MinTimestamp, mtime.MaxTimestamp and mtime.EndOfGlobalWindowTime
// (Java's BoundedWindow.TIMESTAMP_MIN_VALUE etc.), so watermarks computed by
// the runner compare equal to the SDKs' sentinels.
const (
	MinTimestamp int64 = math.MinInt64 / 1000
	MaxTimestamp int64 = math.MaxInt64 / 1000
	// EndOfGlobalWindow is the maximum timestamp of the global window: one day
	// before MaxTimestamp, so that end-of-window timers can still fire.
	EndOfGlobalWindow int64 = MaxTimestamp - 24*60*60*1000
)

// TimestampSize is the encoded size of an event time.
const TimestampSize = 8

// AppendTimestamp appends millis in Beam's event-time encoding: big-endian
// with the sign bit flipped, so encoded timestamps sort like the numbers.
func AppendTimestamp(dst []byte, millis int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(millis)^(1<<63))
}

// Timestamp decodes an event time written by AppendTimestamp.
func Timestamp(b []byte) (int64, error) {
	if len(b) < TimestampSize {
		return 0, ErrShort
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), nil
}
