package lifecycle

import "testing"

func TestParseStatTicks(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "1234 (beam runner) (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0"
	got, err := parseStatTicks(stat)
	if err != nil || got != 325 {
		t.Fatalf("got %d, %v; want 325", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s"} {
		if _, err := parseStatTicks(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
