package metrics

import (
	"fmt"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// boundedTrie is the value of a beam:metrics:bounded_trie:v1 metric: a set
// of string sequences (Beam's lineage uses it for resource paths) kept
// within bound entries by truncating the deepest, smallest subtries. Its
// merge follows the SDKs' BoundedTrieData.combine (Python cells.py, Java
// BoundedTrieData) so the runner's totals equal what an SDK would compute.
// Either singleton or root is set, or neither for an empty trie.
type boundedTrie struct {
	bound     int32
	singleton []string
	root      *trieNode
}

// trieNode is one node: a leaf (no children) ends a sequence; a truncated
// node stands for every sequence with its prefix. size counts the
// sequences below it: max(1, sum of the children's sizes).
type trieNode struct {
	size      int
	truncated bool
	children  map[string]*trieNode
}

func (n *trieNode) clone() *trieNode {
	c := &trieNode{size: n.size, truncated: n.truncated}
	if n.children != nil {
		c.children = make(map[string]*trieNode, len(n.children))
		for k, v := range n.children {
			c.children[k] = v.clone()
		}
	}
	return c
}

// add inserts a sequence and returns the change in size.
func (n *trieNode) add(segs []string) int {
	if n.truncated || len(segs) == 0 {
		return 0
	}
	delta := 0
	child := n.children[segs[0]]
	if child == nil {
		if len(n.children) > 0 {
			delta = 1 // a new branch; a leaf's first child keeps its count
		}
		if n.children == nil {
			n.children = map[string]*trieNode{}
		}
		child = &trieNode{size: 1}
		n.children[segs[0]] = child
	}
	delta += child.add(segs[1:])
	n.size += delta
	return delta
}

// trim truncates the subtrie under the largest child (the first in key
// order among equals, so results do not depend on map order), or this node
// if every child is a leaf, and returns the change in size.
func (n *trieNode) trim() int {
	if len(n.children) == 0 {
		return 0
	}
	var max *trieNode
	for _, k := range slices.Sorted(maps.Keys(n.children)) {
		if c := n.children[k]; max == nil || c.size > max.size {
			max = c
		}
	}
	var delta int
	if max.size == 1 {
		delta = 1 - n.size
		n.truncated, n.children = true, nil
	} else {
		delta = max.trim()
	}
	n.size += delta
	return delta
}

// merge adds other's sequences to n (taking copies) and returns the change
// in size.
func (n *trieNode) merge(other *trieNode) int {
	var delta int
	switch {
	case n.truncated:
	case other.truncated:
		delta = 1 - n.size
		n.truncated, n.children = true, nil
	case len(other.children) == 0:
	case len(n.children) == 0:
		n.children = other.clone().children
		delta = other.size - n.size
	default:
		for _, k := range slices.Sorted(maps.Keys(other.children)) {
			oc := other.children[k]
			if c := n.children[k]; c != nil {
				delta += c.merge(oc)
			} else {
				n.children[k] = oc.clone()
				delta += oc.size
			}
		}
	}
	n.size += delta
	return delta
}

func (t boundedTrie) empty() bool { return t.root == nil && t.singleton == nil }

// size counts t's sequences, as the SDKs' BoundedTrieData.size does.
func (t boundedTrie) size() int {
	switch {
	case t.root != nil:
		return t.root.size
	case t.singleton != nil:
		return 1
	}
	return 0
}

// asTrie returns a copy of t as a root node.
func (t boundedTrie) asTrie() *trieNode {
	if t.root != nil {
		return t.root.clone()
	}
	n := &trieNode{size: 1}
	if t.singleton != nil {
		n.add(t.singleton)
	}
	return n
}

// combine merges two tries into a new one within the smaller bound.
// Neither input is modified.
func (a boundedTrie) combine(b boundedTrie) boundedTrie {
	switch {
	case a.empty():
		return b
	case b.empty():
		return a
	}
	if a.root == nil && b.root != nil {
		a, b = b, a
	}
	out := a.asTrie()
	if b.root != nil {
		out.merge(b.root)
	} else {
		out.add(b.singleton)
	}
	bound := min(a.bound, b.bound)
	out.trimTo(bound)
	return boundedTrie{bound: bound, root: out}
}

// trimTo truncates until at most bound sequences remain. Each trim that
// changes nothing would repeat forever, so it stops there (a truncated
// root has size 1, within any bound decode accepts).
func (n *trieNode) trimTo(bound int32) {
	for n.size > int(bound) {
		if n.trim() == 0 {
			return
		}
	}
}

// decodeBoundedTrie parses the payload, a serialized BoundedTrie proto.
func decodeBoundedTrie(payload []byte) (boundedTrie, error) {
	var pb pipepb.BoundedTrie
	if err := proto.Unmarshal(payload, &pb); err != nil {
		return boundedTrie{}, fmt.Errorf("bounded trie: %w", err)
	}
	if pb.GetBound() < 1 {
		return boundedTrie{}, fmt.Errorf("bounded trie: bound %d, want at least 1", pb.GetBound())
	}
	t := boundedTrie{bound: pb.GetBound()}
	if len(pb.GetSingleton()) > 0 {
		t.singleton = pb.GetSingleton()
	}
	if pb.GetRoot() != nil {
		t.singleton = nil // a root wins; the SDKs never send both
		t.root = nodeFromProto(pb.GetRoot())
		t.root.trimTo(t.bound)
	}
	return t, nil
}

func nodeFromProto(pb *pipepb.BoundedTrieNode) *trieNode {
	n := &trieNode{size: 1}
	if pb.GetTruncated() {
		n.truncated = true
		return n
	}
	if len(pb.GetChildren()) == 0 {
		return n
	}
	n.children = make(map[string]*trieNode, len(pb.GetChildren()))
	sum := 0
	for k, c := range pb.GetChildren() {
		child := nodeFromProto(c)
		n.children[k] = child
		sum += child.size
	}
	n.size = max(1, sum)
	return n
}

func (t boundedTrie) toProto() *pipepb.BoundedTrie {
	pb := &pipepb.BoundedTrie{Bound: t.bound, Singleton: t.singleton}
	if t.root != nil {
		pb.Root = t.root.toProto()
	}
	return pb
}

func (n *trieNode) toProto() *pipepb.BoundedTrieNode {
	pb := &pipepb.BoundedTrieNode{Truncated: n.truncated}
	if len(n.children) > 0 {
		pb.Children = make(map[string]*pipepb.BoundedTrieNode, len(n.children))
		for k, c := range n.children {
			pb.Children[k] = c.toProto()
		}
	}
	return pb
}

// encode serializes t deterministically (map entries sorted).
func (t boundedTrie) encode() []byte {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t.toProto())
	return b
}

// flatten lists t's sequences, each ending in whether it was truncated, in
// sorted order, as the SDKs' get_result does: for tests and debugging.
func (t boundedTrie) flatten() [][]string {
	if t.empty() {
		return nil
	}
	var out [][]string
	var walk func(n *trieNode, prefix []string)
	walk = func(n *trieNode, prefix []string) {
		switch {
		case n.truncated:
			out = append(out, append(append([]string{}, prefix...), "<truncated>"))
		case len(n.children) == 0:
			out = append(out, append([]string{}, prefix...))
		default:
			for _, k := range slices.Sorted(maps.Keys(n.children)) {
				walk(n.children[k], append(prefix, k))
			}
		}
	}
	walk(t.asTrie(), nil)
	return out
}
