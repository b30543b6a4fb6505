package metrics

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

// stringSetLimit caps the total length of a string set's members, as the
// SDKs do (Python's StringSetData, Java's StringSetData): past it, further
// members are dropped, so a job's merged set stays bounded however many
// bundles report.
const stringSetLimit = 1_000_000

// stringSet is the value of a beam:metrics:set_string:v1 metric: a set of
// strings and the total length of its members.
type stringSet struct {
	members map[string]struct{}
	size    int
}

// add inserts s unless the set is already past the limit; the member that
// crosses the limit is kept, as the SDKs keep it.
func (s *stringSet) add(str string) {
	if _, ok := s.members[str]; ok || s.size > stringSetLimit {
		return
	}
	if s.members == nil {
		s.members = map[string]struct{}{}
	}
	s.members[str] = struct{}{}
	s.size += len(str)
}

// union returns a new set holding a's members, then b's in sorted order (so
// which members survive the limit does not depend on map order). Neither
// input is modified.
func (a stringSet) union(b stringSet) stringSet {
	out := stringSet{}
	for _, str := range a.sorted() {
		out.add(str)
	}
	for _, str := range b.sorted() {
		out.add(str)
	}
	return out
}

func (s stringSet) sorted() []string {
	return slices.Sorted(maps.Keys(s.members))
}

// encode writes the payload: beam:coder:iterable:v1 of
// beam:coder:string_utf8:v1 in the known-length form (big-endian int32
// count, then each string length-prefixed), members sorted.
func (s stringSet) encode(b *bytes.Buffer) {
	_ = coder.EncodeInt32(int32(len(s.members)), b)
	for _, str := range s.sorted() {
		_ = coder.EncodeStringUTF8(str, b)
	}
}

// decodeStringSet reads an iterable of UTF-8 strings in either form the
// iterable coder writes: a count, or -1 followed by counted chunks ending
// with a zero count (SDKs use it for iterables of unknown length).
func decodeStringSet(r *bytes.Reader) (stringSet, error) {
	var s stringSet
	n, err := coder.DecodeInt32(r)
	if err != nil {
		return s, err
	}
	if n >= 0 {
		return s, readStrings(r, int64(n), &s)
	}
	if n != -1 {
		return s, fmt.Errorf("string set: bad element count %d", n)
	}
	for {
		chunk, err := coder.DecodeVarInt(r)
		if err != nil {
			return s, err
		}
		if chunk == 0 {
			return s, nil
		}
		if chunk < 0 {
			return s, fmt.Errorf("string set: bad chunk count %d", chunk)
		}
		if err := readStrings(r, chunk, &s); err != nil {
			return s, err
		}
	}
}

// readStrings adds n strings from r to s. n comes from the payload, so it
// is never used to preallocate: a short payload ends the loop with an error.
func readStrings(r *bytes.Reader, n int64, s *stringSet) error {
	for i := int64(0); i < n; i++ {
		str, err := readString(r)
		if err != nil {
			return fmt.Errorf("string set: member %d of %d: %w", i, n, err)
		}
		s.add(str)
	}
	return nil
}

// readString reads one length-prefixed string, checking the length against
// what is left (the SDK coder's decoder would panic on a negative one).
func readString(r *bytes.Reader) (string, error) {
	l, err := coder.DecodeVarInt(r)
	if err != nil {
		return "", err
	}
	if l < 0 || l > int64(r.Len()) {
		return "", fmt.Errorf("length %d with %d bytes left", l, r.Len())
	}
	b := make([]byte, l)
	_, err = io.ReadFull(r, b)
	return string(b), err
}
