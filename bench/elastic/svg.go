package elastic

import (
	"fmt"
	"math"
	"strings"
)

// Plot geometry: four panels stacked over one time axis.
const (
	plotW, panelH, left, right, top, gap = 900.0, 150.0, 70.0, 150.0, 30.0, 40.0
)

type point struct{ x, y float64 }

type series struct {
	name, color string
	pts         []point
}

// SVG plots the run: input and read rate, lag, workers and busy hosts,
// latency p50/p99 (per 10 s of counts read back), with the steps marked.
func SVG(r *Run) string {
	panels := []struct {
		title string
		ss    []series
	}{
		{"records/s", rateSeries(r)},
		{"lag (records in Kafka)", lagSeries(r)},
		{"workers", workerSeries(r)},
		{"latency after window end (s)", latencySeries(r)},
	}
	span := math.Max(lastAt(r.Samples), 1)
	h := top + float64(len(panels))*(panelH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", plotW, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13">elastic: R=%d/s, steps of %s, %d hosts of %.2f core, DS2 %d..%d workers</text>`+"\n",
		left, r.Config.Rate, clock(r.Config.StepSeconds), r.Config.Hosts, r.Config.HostCores, r.Config.MinWorkers, r.Config.MaxWorkers)
	for i, p := range panels {
		y0 := top + float64(i)*(panelH+gap)
		drawPanel(&b, p.title, p.ss, y0, span, r.Steps)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, title string, ss []series, y0, span float64, steps []Step) {
	w := plotW - left - right
	ymax := 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			ymax = math.Max(ymax, p.y)
		}
	}
	ymax = niceCeil(ymax)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", left, y0, w, panelH)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", left, y0-4, title)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end">%g</text><text x="%.0f" y="%.0f" text-anchor="end">0</text>`+"\n",
		left-4, y0+10, ymax, left-4, y0+panelH)
	for _, st := range steps {
		x := left + st.At/span*w
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#bbb" stroke-dasharray="4 3"/>`+"\n", x, y0, x, y0+panelH)
	}
	for m := 0.0; m <= span; m += 60 {
		x := left + m/span*w
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#666">%s</text>`+"\n", x, y0+panelH+12, clock(m))
	}
	for i, s := range ss {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+p.x/span*w, y0+panelH-p.y/ymax*panelH))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", plotW-right+8, y0+14+float64(i)*14, s.color, s.name)
	}
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten (1 for zero).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func rateSeries(r *Run) []series {
	in := series{name: "produced", color: "#1f77b4"}
	read := series{name: "read by the job", color: "#ff7f0e"}
	for i := 1; i < len(r.Samples); i++ {
		a, b := r.Samples[i-1], r.Samples[i]
		if dt := b.At - a.At; dt > 0 {
			in.pts = append(in.pts, point{b.At, float64(b.Produced-a.Produced) / dt})
			read.pts = append(read.pts, point{b.At, float64(b.Read-a.Read) / dt})
		}
	}
	return []series{in, read}
}

func lagSeries(r *Run) []series {
	lag := series{name: "KafkaIO backlog", color: "#d62728"}
	unread := series{name: "produced − counted read", color: "#aaaaaa"}
	for _, s := range r.Samples {
		lag.pts = append(lag.pts, point{s.At, float64(Lag(s))})
		unread.pts = append(unread.pts, point{s.At, float64(Unread(s))})
	}
	return []series{lag, unread}
}

func workerSeries(r *Run) []series {
	dec := series{name: "workers (" + r.Config.PoolEnv + ")", color: "#2ca02c"}
	busy := series{name: "hosts taking bundles", color: "#9467bd"}
	bs := BusyHosts(r.Samples)
	for i, s := range r.Samples {
		dec.pts = append(dec.pts, point{s.At, float64(WorkersAt(r.Events, r.Config.PoolEnv, r.Config.Initial, s.At))})
		if i > 0 {
			busy.pts = append(busy.pts, point{s.At, float64(bs[i])})
		}
	}
	return []series{dec, busy}
}

// latencySeries is p50 and p99 of the counts read back in each 10 s.
func latencySeries(r *Run) []series {
	p50 := series{name: "p50", color: "#1f77b4"}
	p99 := series{name: "p99", color: "#d62728"}
	const bucket = 10.0
	by := map[int][]int64{}
	last := 0
	for _, o := range r.Outputs {
		k := int(o.At / bucket)
		by[k] = append(by[k], o.Ms)
		last = max(last, k)
	}
	for k := 0; k <= last; k++ {
		if xs := by[k]; len(xs) > 0 {
			x := (float64(k) + 1) * bucket
			p50.pts = append(p50.pts, point{x, float64(Percentile(xs, 50)) / 1000})
			p99.pts = append(p99.pts, point{x, float64(Percentile(xs, 99)) / 1000})
		}
	}
	return []series{p50, p99}
}
