package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The pinned Beam's module holds the Java test file the pom compiles in
// place of the 2.73.0 jar's, and the pom's copy names that same file (a
// copy that matches nothing fails silently in Maven).
func TestBeamPinnedJavaTest(t *testing.T) {
	dir, err := beamJavaTestsDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(dir, "/"+beamJavaTests) {
		t.Errorf("dir %s does not end in %s", dir, beamJavaTests)
	}
	pom, err := os.ReadFile("../../java/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	if include := "<include>" + beamPinnedTest + "</include>"; !strings.Contains(string(pom), include) {
		t.Errorf("validates/java/pom.xml has no %s", include)
	}
}
