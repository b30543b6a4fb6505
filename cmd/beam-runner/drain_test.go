package main

import (
	"strings"
	"testing"
)

func TestDrainCommandUsage(t *testing.T) {
	var out strings.Builder
	if code, _ := runCommand("drain", nil, &out); code != 2 || !strings.Contains(out.String(), "usage") {
		t.Fatalf("code %d, output %q; want usage and code 2", code, out.String())
	}
}

func TestDrainCommandUnreachableServer(t *testing.T) {
	var out strings.Builder
	code, _ := runCommand("drain", []string{"--endpoint=127.0.0.1:1", "--timeout=2s", "job-1"}, &out)
	if code != 1 || !strings.Contains(out.String(), "job-1") {
		t.Fatalf("code %d, output %q; want an error naming the job and code 1", code, out.String())
	}
}
