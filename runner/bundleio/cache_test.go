package bundleio

import (
	"bytes"
	"testing"

	"github.com/beam-runner/beam-runner/runner/plan"
)

func TestSideCacheTokens(t *testing.T) {
	sides := []plan.SideInput{
		{Transform: "t1", Tag: "side0"},
		{Transform: "t1", Tag: "side1"},
		{Transform: "t2", Tag: "side0"},
	}
	a, err := sideCacheTokens(sides)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sideCacheTokens(sides)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(sides) {
		t.Fatalf("got %d tokens for %d side inputs", len(a), len(sides))
	}
	seen := map[string]bool{}
	for i, tok := range append(a, b...) {
		si := sides[i%len(sides)]
		ref := tok.GetSideInput()
		if ref.GetTransformId() != si.Transform || ref.GetSideInputId() != si.Tag {
			t.Errorf("token %d names %s/%s, want %s/%s", i, ref.GetTransformId(), ref.GetSideInputId(), si.Transform, si.Tag)
		}
		// A token shared by two stages or two jobs would let an SDK serve
		// one's side input from the other's cache.
		if len(tok.GetToken()) == 0 || seen[string(tok.GetToken())] {
			t.Errorf("token %d is empty or repeated: %x", i, tok.GetToken())
		}
		seen[string(tok.GetToken())] = true
	}
	if bytes.Equal(a[0].GetToken(), b[0].GetToken()) {
		t.Error("two stages got the same token for the same side input")
	}
}
