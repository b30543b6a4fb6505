package xlang

import (
	"strings"
	"testing"
	"time"
)

func TestGrewPast(t *testing.T) {
	at := func(s int, rss, store float64) memSample {
		return memSample{time.Duration(s) * time.Second, rss, store}
	}
	for _, c := range []struct {
		name string
		ss   []memSample
		want []string // measures that grew
		ok   bool
	}{
		{"flat", []memSample{at(0, 10, 1), at(60, 100, 20), at(90, 130, 50), at(120, 105, 21)}, nil, true},
		// 10 % of 500 is 50: past the 32 MiB floor.
		{"within ten percent", []memSample{at(60, 500, 1), at(120, 549, 1)}, nil, true},
		{"rss grew", []memSample{at(60, 500, 1), at(120, 551, 1)}, []string{"RSS"}, true},
		{"store grew then shrank", []memSample{at(60, 40, 10), at(90, 40, 43), at(120, 40, 5)}, []string{"store"}, true},
		{"growth before the minute does not count", []memSample{at(0, 10, 0), at(59, 400, 300), at(60, 400, 300), at(120, 400, 300)}, nil, true},
		{"no sample after the warm-up", []memSample{at(0, 10, 0), at(60, 400, 300)}, nil, false},
	} {
		grew, ok := grewPast(c.ss, flatWarm)
		var what []string
		for _, g := range grew {
			what = append(what, strings.Fields(g)[0])
		}
		if ok != c.ok || strings.Join(what, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: grewPast = %q, %v; want %v, %v", c.name, grew, ok, c.want, c.ok)
		}
	}
}
