package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteReport prints the time table, the memory table and any failures.
func WriteReport(w io.Writer, rep Report) {
	writeTimes(w, rep)
	fmt.Fprintln(w)
	writeMemory(w, rep)
	if len(rep.Errors) > 0 {
		fmt.Fprintln(w, "\nFailures:")
		for _, e := range rep.Errors {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

func writeTimes(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := append([]string{"workload"}, rep.Runners...)
	for _, other := range rep.Runners[min(1, len(rep.Runners)):] {
		head = append(head, rep.Runners[0]+"/"+other)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "outputs"), "\t"))
	for _, row := range rep.Rows {
		cols := []string{row.Workload}
		for _, name := range rep.Runners {
			cols = append(cols, timeCell(row.Cells[name]))
		}
		base := row.Cells[rep.Runners[0]]
		for _, other := range rep.Runners[min(1, len(rep.Runners)):] {
			cols = append(cols, ratioCell(base, row.Cells[other]))
		}
		fmt.Fprintln(tw, strings.Join(append(cols, row.Check), "\t"))
	}
	tw.Flush()
}

// timeCell is the median, "FAIL" if no run succeeded, and marks partial
// failures so a median over fewer rounds is not mistaken for a full one.
func timeCell(c *Cell) string {
	switch {
	case c.Runs == 0:
		return "-"
	case c.Failed == c.Runs:
		return "FAIL"
	case c.Failed > 0:
		return fmt.Sprintf("%s (%d/%d failed)", FormatDuration(c.Median), c.Failed, c.Runs)
	}
	return FormatDuration(c.Median)
}

func ratioCell(a, b *Cell) string {
	if a.Failed == a.Runs || b.Failed == b.Runs {
		return "-"
	}
	return Ratio(a.Median, b.Median)
}

// writeMemory prints median peak RSS: the server's for job servers, and the
// pipeline program's for every runner (with LOOPBACK the SDK workers run
// inside it, and with direct it is the whole runner).
func writeMemory(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"peak RSS (median)"}
	for _, name := range rep.Runners {
		if rep.Servers[name] {
			head = append(head, name+" server")
		}
	}
	for _, name := range rep.Runners {
		head = append(head, name+" client")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rep.Rows {
		cols := []string{row.Workload}
		for _, name := range rep.Runners {
			if rep.Servers[name] {
				cols = append(cols, FormatKB(row.Cells[name].ServerRSSKB))
			}
		}
		for _, name := range rep.Runners {
			cols = append(cols, FormatKB(row.Cells[name].ClientRSSKB))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
}

// WritePayloadMemory prints each job server's median peak RSS per GB of
// payload, for every workload whose payload is known (its records or its
// text): how memory grows with data, comparable across sizes.
func WritePayloadMemory(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"server RSS per GB of payload", "payload"}
	for _, name := range rep.Runners {
		if rep.Servers[name] {
			head = append(head, name)
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rep.Rows {
		if row.PayloadBytes == 0 {
			continue
		}
		cols := []string{row.Workload, FormatKB(row.PayloadBytes >> 10)}
		for _, name := range rep.Runners {
			if rep.Servers[name] {
				cols = append(cols, perGB(row.Cells[name].ServerRSSKB, row.PayloadBytes))
			}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
}

func perGB(rssKB, payload int64) string {
	if rssKB == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f GB", float64(rssKB)*1024/float64(payload))
}
