package bench

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Median returns the median of ds, or 0 when there are none. With an even
// count it averages the middle two, so two rounds still give a fair middle.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// MedianInt64 returns the median of vs, or 0 for none; with an even count,
// the mean of the middle two.
func MedianInt64(vs []int64) int64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Ratio formats a/b as "1.23x"; "-" when either side is missing, so a failed
// runner never shows as infinitely fast or slow.
func Ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// FormatKB formats a size in KiB as MiB, the unit peak RSS is read in.
func FormatKB(kb int64) string {
	if kb <= 0 {
		return "-"
	}
	return fmt.Sprintf("%dMiB", (kb+512)/1024)
}

// FormatDuration rounds to what a human compares across runners.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
