package xlang

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The back-pressure check's stated bound (issue 36): after the first
// minute, the server's RSS and its store each stay within 10 % or 32 MiB,
// whichever is more, of their value at one minute.
const (
	flatWarm     = time.Minute
	flatFraction = 0.10
	flatFloorMiB = 32
)

// memSample is one reading of the job server: its resident memory and
// the size of its --state_dir on disk.
type memSample struct {
	at               time.Duration // since the job began running
	rssMiB, storeMiB float64
}

// grewPast names each measure whose largest value after warm exceeds its
// value at warm (the first sample at or after it) by more than the bound;
// none when both stayed within it. ok is false when no sample follows the
// warm-up, so nothing was measured.
func grewPast(ss []memSample, warm time.Duration) (grew []string, ok bool) {
	i := slices.IndexFunc(ss, func(s memSample) bool { return s.at >= warm })
	if i < 0 || i == len(ss)-1 {
		return nil, false
	}
	for _, m := range []struct {
		what string
		get  func(memSample) float64
	}{
		{"RSS", func(s memSample) float64 { return s.rssMiB }},
		{"store", func(s memSample) float64 { return s.storeMiB }},
	} {
		from, peak := m.get(ss[i]), ss[i]
		for _, s := range ss[i+1:] {
			if m.get(s) > m.get(peak) {
				peak = s
			}
		}
		if m.get(peak) > from+max(from*flatFraction, flatFloorMiB) {
			grew = append(grew, fmt.Sprintf("%s grew from %.1f MiB at %v to %.1f MiB at %v", m.what,
				from, ss[i].at.Round(time.Second), m.get(peak), peak.at.Round(time.Second)))
		}
	}
	return grew, true
}

// seriesSummary is the samples at about every step, for a log line:
// "0:10 RSS 41/store 2.1, 0:20 ...".
func seriesSummary(ss []memSample, step time.Duration) string {
	var b strings.Builder
	next := time.Duration(0)
	for j, s := range ss {
		if s.at < next && j != len(ss)-1 {
			continue
		}
		next = s.at.Truncate(step) + step
		fmt.Fprintf(&b, "%d:%02d %.0f/%.1f  ", int(s.at.Minutes()), int(s.at.Seconds())%60, s.rssMiB, s.storeMiB)
	}
	return strings.TrimSpace(b.String())
}
