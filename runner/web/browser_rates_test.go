package web_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// rateLook is one stage table row's rate cells, as text, and the busy
// figure its graph box is coloured by ("" if uncoloured).
type rateLook struct {
	ID            string `json:"id"`
	Busy          string `json:"busy"`
	Idle          string `json:"idle"`
	BackPressured string `json:"bp"`
	Rate          string `json:"rate"`
	ObservedIn    string `json:"in"`
	GraphBusy     string `json:"graphBusy"`
}

const readRates = `[...document.querySelectorAll("#stages-body tr")].map(tr => {
	const c = (col) => (tr.querySelector('td[data-col="' + col + '"]') || {}).textContent || "";
	const box = document.querySelector('#graph g.stage[data-stage="' + tr.dataset.stage + '"] rect.box');
	return {id: tr.dataset.stage, busy: c("busy"), idle: c("idle"), bp: c("backpressured"),
		rate: c("processing-rate"), in: c("observed-in"), graphBusy: (box && box.dataset.busy) || ""};
})`

// waitRates reads the stage table until two stages show measured busy
// times and one a processing rate above zero (the server publishes rates
// once a second).
func waitRates(ctx context.Context) ([]rateLook, error) {
	var rows []rateLook
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const rs = `+readRates+`;
		return rs.filter(r => r.busy !== "—" && r.busy !== "").length >= 2 &&
			rs.some(r => Number(r.rate.replace(/[^0-9.]/g, "")) > 0); })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		return nil, fmt.Errorf("waiting for measured rates in the stage table: %w", err)
	}
	rows, err = chromedp.Run(ctx, chromedp.Evaluate[[]rateLook](readRates))
	return rows, err
}

// checkRates requires the measured stages' busy and idle figures to be
// milliseconds per second, their graph boxes coloured by the same busy
// figure, and back-pressure, which nothing measures yet, shown as "—".
func checkRates(t *testing.T, rows []rateLook) {
	t.Helper()
	t.Logf("rates %+v", rows)
	measured := 0
	for _, r := range rows {
		if r.Busy == "—" {
			continue
		}
		measured++
		busy, idle := figure(r.Busy), figure(r.Idle)
		if busy < 0 || busy > 1000 || idle < 0 || busy+idle > 1000.5 {
			t.Errorf("stage %s: busy %q idle %q are not milliseconds per second", r.ID, r.Busy, r.Idle)
		}
		// λp is undefined, "—", while the window holds no busy time (bundles
		// shorter than a millisecond).
		if (busy > 0) == (r.Rate == "—") || r.Rate == "" || r.ObservedIn == "" || r.ObservedIn == "—" {
			t.Errorf("stage %s: busy %q, processing rate %q, observed input %q; want figures (λp — only without busy time)", r.ID, r.Busy, r.Rate, r.ObservedIn)
		}
		if r.GraphBusy == "" {
			t.Errorf("stage %s has a busy time in the table but its graph box is not coloured by it", r.ID)
		}
		if r.BackPressured != "—" {
			t.Errorf("stage %s: back-pressure %q shown, but nothing measures it yet", r.ID, r.BackPressured)
		}
	}
	if measured < 2 {
		t.Errorf("%d stages show rates; want the source and the sum", measured)
	}
}

// figure parses a table figure ("1,234", "12.5"), -1 if it is none.
func figure(s string) float64 {
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		return -1
	}
	return v
}
