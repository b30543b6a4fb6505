package beamrunner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/internal/textclip"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

// progress redraws one line per stage of the in-process server's jobs on a
// terminal, in place, until stopped.
type progress struct {
	svc   *jobs.Service
	out   io.Writer
	every time.Duration

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	drawn    int // lines drawn last time, to move back over
}

func startProgress(svc *jobs.Service, out io.Writer, every time.Duration) *progress {
	p := &progress{svc: svc, out: out, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.draw()
		case <-p.stop:
			p.draw() // the final counts stay on screen
			return
		}
	}
}

// Stop draws the last state and stops redrawing.
func (p *progress) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}

func (p *progress) draw() {
	var lines []string
	now := time.Now()
	for _, s := range p.svc.Summaries() {
		d, err := p.svc.Detail(s.ID)
		if err != nil {
			continue
		}
		lines = append(lines, progressLines(d, now)...)
	}
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn) // back to the first line drawn
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K" + l + "\n") // clear, then write
	}
	p.drawn = len(lines)
	io.WriteString(p.out, b.String())
}

// progressLines is a job's header line and one line per SDK stage.
func progressLines(d jobs.Detail, now time.Time) []string {
	lines := []string{fmt.Sprintf("beam-runner: job %s %s %s", d.ID, d.State, elapsed(d.Summary, now))}
	for _, st := range d.Stats.Stages {
		if st.Kind != "sdk" {
			continue
		}
		rate := 0.0
		if n := len(st.Rate); n > 0 {
			rate = st.Rate[n-1]
		}
		lines = append(lines, fmt.Sprintf("  %-4s %-40s in %8d  out %8d  %7.0f/s  bundles %d/%d  wm %s",
			st.ID, textclip.Clip(st.Name, 40), st.ElementsIn, st.ElementsOut, rate, st.BundlesRunning, st.BundlesDone, watermark(st.Watermark, now)))
	}
	return lines
}

func elapsed(s jobs.Summary, now time.Time) string {
	if s.Start.IsZero() {
		return ""
	}
	end := now
	if !s.End.IsZero() {
		end = s.End
	}
	return end.Sub(s.Start).Round(100 * time.Millisecond).String()
}

// watermark shows a stage's output watermark as its lag behind now.
func watermark(wm int64, now time.Time) string {
	switch {
	case wm <= -9e15:
		return "-"
	case wm >= 9e15:
		return "done"
	}
	return "lag " + now.Sub(time.UnixMilli(wm)).Round(100*time.Millisecond).String()
}
