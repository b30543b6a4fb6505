package engine

import (
	"fmt"
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// How scripts write data (testdata/README.md says the same for readers):
// an element is key:value@timestamp (a KV of strings), value@timestamp (a
// string) or key:[v1,v2]@timestamp (a GroupByKey's output); '' is the
// empty string. Timestamps are milliseconds, or MIN, MAX, MAX-1 and EOGW
// (the end of the global window). An element gets its window from its
// PCollection's windowing, as if a WindowInto had just run.

// scriptCoders are the wire coders of script PCollections and timers.
var scriptCoders = map[string]*pipepb.Coder{
	"bytes":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
	"kv":        {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "bytes"}},
	"iter":      {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"bytes"}},
	"grouped":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "iter"}},
	"global":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:global_window:v1"}},
	"interval":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:interval_window:v1"}},
	"timer/gw":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:timer:v1"}, ComponentCoderIds: []string{"bytes", "global"}},
	"timer/iw":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:timer:v1"}, ComponentCoderIds: []string{"bytes", "interval"}},
	"wv/bytes":  wvCoder("bytes", "global"),
	"wv/kv":     wvCoder("kv", "global"),
	"wv/kv/iw":  wvCoder("kv", "interval"),
	"wv/grp":    wvCoder("grouped", "global"),
	"wv/grp/iw": wvCoder("grouped", "interval"),
}

func wvCoder(elem, window string) *pipepb.Coder {
	return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{elem, window}}
}

// windowFn is a PCollection's windowing: global, fixed(size) or
// sessions(gap), whose element windows are [ts, ts+gap) before merging.
type windowFn struct {
	kind string
	size int64
}

func parseWindowFn(s string) (windowFn, error) {
	if s == "global" {
		return windowFn{kind: s}, nil
	}
	name, arg, ok := strings.Cut(strings.TrimSuffix(s, ")"), "(")
	size, err := strconv.ParseInt(arg, 10, 64)
	if !ok || err != nil || !strings.HasSuffix(s, ")") || size <= 0 || (name != "fixed" && name != "sessions") {
		return windowFn{}, fmt.Errorf("window %q: want global, fixed(size) or sessions(gap)", s)
	}
	return windowFn{kind: name, size: size}, nil
}

func (w windowFn) windowKind() coders.WindowKind {
	if w.kind == "global" {
		return coders.GlobalWindow
	}
	return coders.IntervalWindows
}

// assign is the encoded window of an element at ts.
func (w windowFn) assign(ts int64) []byte {
	switch w.kind {
	case "fixed":
		start := ts - ((ts%w.size)+w.size)%w.size
		return coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: start, End: start + w.size})
	case "sessions":
		return coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: ts, End: ts + w.size})
	}
	return nil
}

// pcollDecl is a script PCollection: its element shape and windowing.
type pcollDecl struct {
	id    string
	shape string // kv, bytes or grouped
	win   windowFn
	// lateness is the allowed lateness of its windowing, which a stage
	// reading it as a side input waits for.
	lateness int64
	codec    *coders.WindowedValueCodec
}

func (p *pcollDecl) coderID() string {
	id := map[string]string{"kv": "wv/kv", "bytes": "wv/bytes", "grouped": "wv/grp"}[p.shape]
	if p.win.kind != "global" && p.shape != "bytes" {
		id += "/iw"
	}
	return id
}

// encode encodes element tokens as one chunk of windowed values.
func (p *pcollDecl) encode(toks []string) ([]byte, error) {
	var buf []byte
	for _, tok := range toks {
		body, tsText, ok := cutLast(tok, "@")
		if !ok {
			return nil, fmt.Errorf("element %q of %s: want value@timestamp", tok, p.id)
		}
		ts, err := parseTS(tsText)
		if err != nil {
			return nil, fmt.Errorf("element %q of %s: %w", tok, p.id, err)
		}
		elem, err := p.encodeElem(body)
		if err != nil {
			return nil, fmt.Errorf("element %q of %s: %w", tok, p.id, err)
		}
		buf = coders.AppendWindowedValue(buf, ts, 1, p.win.assign(ts), coders.NoFiringPane, elem)
	}
	return buf, nil
}

func (p *pcollDecl) encodeElem(body string) ([]byte, error) {
	if p.shape == "bytes" {
		return lp(body), nil
	}
	k, v, ok := strings.Cut(body, ":")
	if !ok {
		return nil, fmt.Errorf("want key:value")
	}
	if p.shape == "kv" {
		return append(lp(k), lp(v)...), nil
	}
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return nil, fmt.Errorf("want key:[v1,v2,...]")
	}
	var vs []string
	if inner := v[1 : len(v)-1]; inner != "" {
		vs = strings.Split(inner, ",")
	}
	out := coders.AppendIterableHeader(lp(k), int32(len(vs)))
	for _, x := range vs {
		out = append(out, lp(x)...)
	}
	return out, nil
}

// format writes each element of chunks on a line of its own.
func (p *pcollDecl) format(chunks [][]byte) ([]string, error) {
	var lines []string
	var v coders.WindowedValue
	for _, c := range chunks {
		for off := 0; off < len(c); {
			n, err := p.codec.Parse(c[off:], &v)
			if err != nil {
				return nil, fmt.Errorf("%s: element at offset %d: %w", p.id, off, err)
			}
			off += n
			elem, err := p.formatElem(v.Elem)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.id, err)
			}
			line := elem + "@" + formatTS(v.Timestamp) + formatWindows(p.win, v.NumWindows, v.Windows)
			if v.Pane != coders.NoFiringPane {
				line += " " + formatPane(v.Pane)
			}
			lines = append(lines, line)
		}
	}
	return lines, nil
}

func (p *pcollDecl) formatElem(b []byte) (string, error) {
	first, n, err := coders.LengthPrefixed(b)
	if err != nil || p.shape == "bytes" {
		return quoteEmpty(string(first)), err
	}
	if p.shape == "kv" {
		v, _, err := coders.LengthPrefixed(b[n:])
		return quoteEmpty(string(first)) + ":" + quoteEmpty(string(v)), err
	}
	count, m, err := coders.IterableHeader(b[n:])
	if err != nil {
		return "", err
	}
	vals, rest := make([]string, 0, max(count, 0)), b[n+m:]
	for range count {
		v, k, err := coders.LengthPrefixed(rest)
		if err != nil {
			return "", err
		}
		vals, rest = append(vals, quoteEmpty(string(v))), rest[k:]
	}
	return quoteEmpty(string(first)) + ":[" + strings.Join(vals, ",") + "]", nil
}

// formatWindows writes interval windows as " [start,end)"; the global
// window is left out.
func formatWindows(w windowFn, n int, b []byte) string {
	if w.windowKind() == coders.GlobalWindow {
		return ""
	}
	var out string
	for range n {
		iw, k, err := coders.DecodeIntervalWindow(b)
		if err != nil {
			return fmt.Sprintf(" <bad window %x>", b)
		}
		out += fmt.Sprintf(" [%s,%s)", formatTS(iw.Start), formatTS(iw.End))
		b = b[k:]
	}
	return out
}

// formatPane writes a GroupByKey firing's pane as Beam's PaneInfo says it:
// timing, index, on-time index (not for early panes) and first/last.
func formatPane(p coders.PaneInfo) string {
	timing := [...]string{"EARLY", "ON_TIME", "LATE", "UNKNOWN"}[p.Timing&3]
	s := fmt.Sprintf("pane=%s,index=%d", timing, p.Index)
	if p.Timing != coders.TimingEarly {
		s += fmt.Sprintf(",on-time-index=%d", p.OnTimeIndex)
	}
	if p.IsFirst {
		s += ",first"
	}
	if p.IsLast {
		s += ",last"
	}
	return s
}

// parseWindow reads "[start,end)" as an encoded interval window.
func parseWindow(s string) ([]byte, error) {
	start, end, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "["), ")"), ",")
	a, err1 := parseTS(start)
	b, err2 := parseTS(end)
	if !ok || err1 != nil || err2 != nil || !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, ")") {
		return nil, fmt.Errorf("window %q: want [start,end)", s)
	}
	return coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: a, End: b}), nil
}

var namedTimes = map[string]int64{
	"MIN": coders.MinTimestamp, "MAX": coders.MaxTimestamp, "MAX-1": coders.MaxTimestamp - 1,
	"EOGW": coders.EndOfGlobalWindow,
}

func parseTS(s string) (int64, error) {
	if t, ok := namedTimes[s]; ok {
		return t, nil
	}
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q: want milliseconds, MIN, MAX, MAX-1 or EOGW", s)
	}
	return t, nil
}

func formatTS(t int64) string {
	for name, v := range namedTimes {
		if v == t {
			return name
		}
	}
	return strconv.FormatInt(t, 10)
}

// lp is s as a nested bytes (or string) value: length-prefixed.
func lp(s string) []byte {
	if s == "''" {
		s = ""
	}
	return coders.AppendLengthPrefixed(nil, []byte(s))
}

// formatKey writes a length-prefixed key as its string.
func formatKey(k []byte) string {
	s, _, err := coders.LengthPrefixed(k)
	if err != nil {
		return fmt.Sprintf("<bad key %x>", k)
	}
	return quoteEmpty(string(s))
}

func quoteEmpty(s string) string {
	if s == "" {
		return "''"
	}
	return s
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
