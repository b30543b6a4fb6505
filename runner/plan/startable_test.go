package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestStartableEnvironments checks that the caller's predicate decides which
// environments a plan accepts, and that a refusal names the URN.
func TestStartableEnvironments(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, splitWords, beam.Create(s, "a b"))
	pb := gopipe.ForTest(t, p)
	var asked []string
	_, err := BuildWith(pb, Options{Startable: func(urn string) bool { asked = append(asked, urn); return false }})
	if err == nil || !strings.Contains(err.Error(), "beam:env:external:v1") {
		t.Fatalf("BuildWith refusing every environment: err = %v, want one naming the URN", err)
	}
	if len(asked) == 0 {
		t.Fatal("the predicate was never asked")
	}
	if _, err := BuildWith(pb, Options{Startable: func(urn string) bool { return urn == "beam:env:external:v1" }}); err != nil {
		t.Fatalf("BuildWith accepting external: %v", err)
	}
}
