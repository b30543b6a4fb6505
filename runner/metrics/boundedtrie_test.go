package metrics

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// trieCase is one case of testdata/bounded_trie_cases.json: payloads the
// Python SDK encoded per bundle, and the SDK's own combine of them.
type trieCase struct {
	Bound    int32
	Payloads []string
	Added    [][]string
	Size     int
	Result   [][2]json.RawMessage // [segments, truncated]
}

func loadTrieCases(t *testing.T) []trieCase {
	t.Helper()
	b, err := os.ReadFile("testdata/bounded_trie_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []trieCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// sdkResult turns the SDK's get_result into flatten's form.
func sdkResult(t *testing.T, c trieCase) [][]string {
	var out [][]string
	for _, r := range c.Result {
		var segs []string
		var truncated bool
		if err := json.Unmarshal(r[0], &segs); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r[1], &truncated); err != nil {
			t.Fatal(err)
		}
		if truncated {
			segs = append(segs, "<truncated>")
		}
		out = append(out, append([]string{}, segs...))
	}
	return out
}

// contains reports whether seq is in the trie or under a truncated prefix.
func (n *trieNode) contains(seq []string) bool {
	if n.truncated || len(seq) == 0 {
		return true
	}
	c := n.children[seq[0]]
	return c != nil && c.contains(seq[1:])
}

// The store merges bundles' tries as the Python SDK's combine does: the
// same size, every reported sequence still covered, and the same trie
// wherever the SDK's trimming had no ties to break (the SDK breaks them by
// insertion order, which the proto does not carry).
func TestBoundedTrieMatchesPythonSDK(t *testing.T) {
	cases := loadTrieCases(t)
	exact := 0
	for i, c := range cases {
		s := NewStore()
		for _, p := range c.Payloads {
			b, err := hex.DecodeString(p)
			if err != nil {
				t.Fatal(err)
			}
			s.AddBundle([]*pipepb.MonitoringInfo{{Urn: UrnBoundedTrie, Labels: user("t", "bt"), Payload: b}})
		}
		res := s.Results()
		if len(res) != 1 || res[0].GetType() != typeBoundedTrie {
			t.Fatalf("case %d: results %v", i, res)
		}
		got := find(t, res, UrnBoundedTrie, user("t", "bt")).trie
		root := got.asTrie()
		if got.size() != c.Size {
			t.Errorf("case %d (bound %d): size %d, SDK %d", i, c.Bound, got.size(), c.Size)
		}
		for _, seq := range c.Added {
			if !root.contains(seq) {
				t.Errorf("case %d: %q lost", i, seq)
			}
		}
		want := sdkResult(t, c)
		if reflect.DeepEqual(got.flatten(), want) {
			exact++
		} else if !strings.Contains(strings.Join(flat(want), " "), "<truncated>") {
			t.Errorf("case %d: trie %q, SDK %q (no truncation, so no ties)", i, got.flatten(), want)
		}
	}
	t.Logf("%d of %d cases equal the SDK's trie exactly", exact, len(cases))
	if exact < len(cases)*3/4 {
		t.Errorf("only %d of %d cases equal the SDK's trie", exact, len(cases))
	}
}

func flat(seqs [][]string) []string {
	var out []string
	for _, s := range seqs {
		out = append(out, s...)
	}
	return out
}

func TestBoundedTrieRejectsBadPayloads(t *testing.T) {
	zero, _ := proto.Marshal(&pipepb.BoundedTrie{Bound: 0, Singleton: []string{"a"}})
	neg, _ := proto.Marshal(&pipepb.BoundedTrie{Bound: -3, Singleton: []string{"a"}})
	for name, p := range map[string][]byte{"bound 0": zero, "negative bound": neg, "not a proto": {0xff, 0xff}} {
		if _, err := decode(kindBoundedTrie, p); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	// An oversized trie from an SDK is trimmed to its bound on arrival.
	big := &pipepb.BoundedTrieNode{Children: map[string]*pipepb.BoundedTrieNode{}}
	for _, k := range []string{"a", "b", "c", "d"} {
		big.Children[k] = &pipepb.BoundedTrieNode{}
	}
	p, _ := proto.Marshal(&pipepb.BoundedTrie{Bound: 2, Root: big})
	v, err := decode(kindBoundedTrie, p)
	if err != nil {
		t.Fatal(err)
	}
	if v.trie.root.size > 2 {
		t.Errorf("size %d after decode, bound 2", v.trie.root.size)
	}
}

func TestBoundedTrieCombineLeavesInputsAlone(t *testing.T) {
	a := boundedTrie{bound: 10, singleton: []string{"x", "y"}}
	b := boundedTrie{bound: 10, root: &trieNode{size: 1}}
	b.root.add([]string{"x", "z"})
	before := b.root.clone()
	c := a.combine(b)
	if got, want := c.flatten(), [][]string{{"x", "y"}, {"x", "z"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("combined = %q, want %q", got, want)
	}
	c.root.add([]string{"w"})
	if !reflect.DeepEqual(b.root, before) || len(a.singleton) != 2 {
		t.Errorf("combine shares or changed its inputs")
	}
}
