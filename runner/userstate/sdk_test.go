package userstate

import (
	"bytes"
	"io"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// goSDKEntry encodes an entry exactly as the Go SDK's unexported
// exec.encodeOrderedListEntry does, from the same exported pieces.
func goSDKEntry(t *testing.T, c *coder.Coder, sortKey int64, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.Write(protowire.AppendVarint(nil, uint64(sortKey)))
	if err := exec.MakeElementEncoder(coder.SkipW(c)).Encode(&exec.FullValue{Elm: v}, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGoSDKOrderedList appends entries encoded by the Go SDK's coders and
// decodes what Get serves with the SDK's decoder, the way
// stateProvider.ReadOrderedListState reads it back.
func TestGoSDKOrderedList(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sdk   *coder.Coder
		urn   string
		vals  []any
		order []int // expected read order as indexes into vals
	}{
		{"string", coder.NewString(), coders.URNStringUTF8, []any{"c", "a", "b", "a2"}, []int{1, 3, 2, 0}},
		{"varint", coder.NewVarInt(), coders.URNVarint, []any{int64(30), int64(-10), int64(20), int64(-11)}, []int{1, 3, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			codec := compile(t, tc.urn)
			s := NewStore()
			tx := s.Begin(func(string, string) (*coders.Codec, error) { return codec, nil })
			keys := []int64{9, -5, 7, -5} // duplicate -5 keeps insertion order
			var all []byte
			for i, v := range tc.vals {
				all = append(all, goSDKEntry(t, tc.sdk, keys[i], v)...)
			}
			// The first two in one Append (several entries), the rest one by one.
			split := len(goSDKEntry(t, tc.sdk, keys[0], tc.vals[0])) + len(goSDKEntry(t, tc.sdk, keys[1], tc.vals[1]))
			mustWrite(t, tx, appendReq(list("l", "k", "w", nil), all[:split]))
			mustWrite(t, tx, appendReq(list("l", "k", "w", nil), goSDKEntry(t, tc.sdk, keys[2], tc.vals[2])))
			mustWrite(t, tx, appendReq(list("l", "k", "w", nil), goSDKEntry(t, tc.sdk, keys[3], tc.vals[3])))
			s.Commit(tx)
			got := decodeGoSDK(t, tc.sdk, mustGet(t, s.Begin(nil), list("l", "k", "w", rng(-1<<63, 1<<63-1))))
			for i, idx := range tc.order {
				if got[i] != tc.vals[idx] {
					t.Fatalf("entry %d = %v, want %v (all %v)", i, got[i], tc.vals[idx], got)
				}
			}
		})
	}
}

func decodeGoSDK(t *testing.T, c *coder.Coder, pieces [][]byte) []any {
	t.Helper()
	r := bytes.NewReader(bytes.Join(pieces, nil))
	dec := exec.MakeElementDecoder(coder.SkipW(c))
	var out []any
	for r.Len() > 0 {
		if _, err := binaryUvarint(r); err != nil {
			t.Fatal(err)
		}
		fv, err := dec.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fv.Elm)
	}
	return out
}

func binaryUvarint(r io.ByteReader) (uint64, error) {
	var v uint64
	for s := uint(0); ; s += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << s
		if b < 0x80 {
			return v, nil
		}
	}
}

// TestPythonOrderedList builds entries as Python's
// TupleCoder(VarIntCoder, LengthPrefixCoder(value_coder)) writes them: the
// sort key, then the value's outer encoding behind a length prefix. Here the
// value coder is VarIntCoder, whose nested form would have no prefix, so the
// Go-style lookup would misparse it; LengthPrefixedValues must be used.
func TestPythonOrderedList(t *testing.T) {
	py := func(sortKey, v int64) []byte {
		val := coders.AppendVarint(nil, v)
		return coders.AppendLengthPrefixed(coders.AppendVarint(nil, sortKey), val)
	}
	data := append(append(py(3, 300), py(-1, 1)...), py(3, 7)...)
	s := NewStore()
	tx := s.Begin(func(string, string) (*coders.Codec, error) { return LengthPrefixedValues(), nil })
	mustWrite(t, tx, appendReq(list("l", "k", "w", nil), data))
	got := mustGet(t, tx, list("l", "k", "w", rng(-1<<63, 1<<63-1)))
	want := [][]byte{py(-1, 1), py(3, 300), py(3, 7)}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("entry %d = %x, want %x", i, got[i], want[i])
		}
	}
}
