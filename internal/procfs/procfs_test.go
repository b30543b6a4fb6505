package procfs

import (
	"strings"
	"testing"
)

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tprism\nVmPeak:\t 2000 kB\nVmHWM:\t  479176 kB\nVmRSS:\t 1000 kB\n"
	got, err := parseVmHWM(strings.NewReader(status))
	if err != nil || got != 479176 {
		t.Errorf("parseVmHWM = %d, %v", got, err)
	}
	if _, err := parseVmHWM(strings.NewReader("Name:\tx\n")); err == nil {
		t.Error("want an error without VmHWM")
	}
}
