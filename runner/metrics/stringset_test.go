package metrics

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// strSetPayload encodes strs as the SDKs do: iterable coder, known length.
func strSetPayload(strs ...string) []byte {
	var b bytes.Buffer
	coder.EncodeInt32(int32(len(strs)), &b)
	for _, s := range strs {
		coder.EncodeVarInt(int64(len(s)), &b)
		b.WriteString(s)
	}
	return b.Bytes()
}

func members(v value) []string { return v.strs.sorted() }

func TestStringSetsUnionAcrossBundles(t *testing.T) {
	s := NewStore()
	s.AddBundle([]*pipepb.MonitoringInfo{{Urn: UrnSetString, Labels: user("t", "s"), Payload: strSetPayload("zzz", "a")}})
	s.AddBundle([]*pipepb.MonitoringInfo{{Urn: UrnSetString, Labels: user("t", "s"), Payload: strSetPayload("a", "b", "")}})
	res := s.Results()
	if len(res) != 1 || res[0].GetType() != typeSetString {
		t.Fatalf("results = %v, want one %s", res, typeSetString)
	}
	if got, want := members(find(t, res, UrnSetString, user("t", "s"))), []string{"", "a", "b", "zzz"}; !reflect.DeepEqual(got, want) {
		t.Errorf("members = %q, want %q", got, want)
	}
	// The payload is canonical: sorted, in the known-length form.
	if got, want := res[0].GetPayload(), strSetPayload("", "a", "b", "zzz"); !bytes.Equal(got, want) {
		t.Errorf("payload = %x, want %x", got, want)
	}
}

func TestStringSetDecodesChunkedIterables(t *testing.T) {
	// -1, then chunks of 2 and 1 members, then a zero count.
	var b bytes.Buffer
	coder.EncodeInt32(-1, &b)
	coder.EncodeVarInt(2, &b)
	b.Write(strSetPayload("x", "y")[4:])
	coder.EncodeVarInt(1, &b)
	b.Write(strSetPayload("z")[4:])
	coder.EncodeVarInt(0, &b)
	v, err := decode(kindSetString, b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := members(v), []string{"x", "y", "z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("members = %q, want %q", got, want)
	}
}

func TestStringSetRejectsMalformedPayloads(t *testing.T) {
	negLen := append([]byte{0, 0, 0, 1}, varints(-5)...)
	for name, p := range map[string][]byte{
		"empty":           nil,
		"short count":     {0, 0},
		"missing member":  strSetPayload("a", "b")[:6],
		"negative length": negLen,
		"length past end": append([]byte{0, 0, 0, 1}, varints(1<<40)...),
		"bad count":       {0xff, 0xff, 0xff, 0xfe},
		"no chunk end":    {0xff, 0xff, 0xff, 0xff, 1, 1, 'a'},
	} {
		if _, err := decode(kindSetString, p); err == nil {
			t.Errorf("%s: decoded %x without error", name, p)
		}
	}
	// The store skips them and keeps what it had.
	s := NewStore()
	s.AddBundle([]*pipepb.MonitoringInfo{{Urn: UrnSetString, Labels: user("t", "s"), Payload: strSetPayload("ok")}})
	s.AddBundle([]*pipepb.MonitoringInfo{{Urn: UrnSetString, Labels: user("t", "s"), Payload: negLen}})
	if got := members(find(t, s.Results(), UrnSetString, user("t", "s"))); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("members = %q, want [ok]", got)
	}
}

func TestStringSetStopsGrowingPastTheLimit(t *testing.T) {
	big := strings.Repeat("x", stringSetLimit)
	var a stringSet
	a.add(big + "1") // crosses the limit: kept, as the SDKs keep it
	b := stringSet{}
	b.add("small")
	u := a.union(b)
	if got := u.sorted(); len(got) != 1 || got[0] != big+"1" {
		t.Errorf("members past the limit: %d (want only the first)", len(got))
	}
	if len(a.members) != 1 || len(b.members) != 1 {
		t.Errorf("union modified its inputs")
	}
}

// FuzzDecode: no payload, of any kind, may panic the store.
func FuzzDecode(f *testing.F) {
	f.Add(uint8(kindSetString), strSetPayload("a", "b"))
	f.Add(uint8(kindDistInt64), varints(1, 2, 3, 4))
	f.Add(uint8(kindLatestDouble), append(varints(5), doubles(1.5)...))
	trie, _ := hex.DecodeString("0803122812160a0261301210120e0a026131120812060a0261321200120e0a026430120812060a0262301200")
	f.Add(uint8(kindBoundedTrie), trie)
	f.Fuzz(func(t *testing.T, k uint8, payload []byte) {
		kd := kind(k % uint8(kindBoundedTrie+1))
		v, err := decode(kd, payload)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same value.
		again, err := decode(kd, encode(v))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(encode(again), encode(v)) {
			t.Fatalf("round trip changed %x to %x", encode(v), encode(again))
		}
	})
}
