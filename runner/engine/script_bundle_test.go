package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/cockroachdb/datadriven"
)

// bundleArgs reads the bundle id a directive starts with: a bundle ready
// handed out (since the last pipeline or restore).
func (s *script) bundleArgs(td *datadriven.TestData) (*Bundle, *lineArgs, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	w := a.word("bundle id")
	id, err := strconv.Atoi(w)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: bundle id %q is not a number", td.Pos, w)
	}
	b := s.bundles[id]
	if b == nil {
		return nil, nil, fmt.Errorf("%s: bundle %d was never handed out (handed out: %v)", td.Pos, id, slices.Sorted(maps.Keys(s.bundles)))
	}
	return b, a, nil
}

func (s *script) bundleArg(td *datadriven.TestData) (*Bundle, error) {
	b, a, err := s.bundleArgs(td)
	if err != nil {
		return nil, err
	}
	return b, a.finish()
}

// formatBundle writes a bundle as a header line, then its input elements
// and timers, one a line.
func (s *script) formatBundle(b *Bundle) ([]string, error) {
	head := fmt.Sprintf("bundle %d stage=%s", b.ID, b.Stage)
	if len(b.Keys) > 0 {
		keys := make([]string, len(b.Keys))
		for i, k := range b.Keys {
			keys[i] = formatKey([]byte(k))
		}
		head += " keys=(" + strings.Join(keys, ",") + ")"
	}
	if b.Lane > 0 {
		head += fmt.Sprintf(" lane=%d", b.Lane-1)
	}
	if b.Attempt > 1 {
		head += fmt.Sprintf(" attempt=%d", b.Attempt)
	}
	if len(b.Avoid) > 0 {
		head += " avoid=(" + strings.Join(b.Avoid, ",") + ")"
	}
	decl, err := s.p.mainInput(b.Stage)
	if err != nil {
		return nil, err
	}
	elems, err := decl.format(b.Input)
	if err != nil {
		return nil, fmt.Errorf("bundle %d: %w", b.ID, err)
	}
	lines := []string{head}
	for _, e := range elems {
		lines = append(lines, "  "+e)
	}
	timers, err := s.formatTimers(b, decl)
	return append(lines, timers...), err
}

func (s *script) formatTimers(b *Bundle, in *pcollDecl) ([]string, error) {
	ss, _ := s.p.stageSpec(b.Stage)
	var lines []string
	for _, ts := range ss.Timers {
		err := eachTimer(b.Timers[ts.Stream], ts.Codec, func(tm *coders.Timer, _ []byte) {
			line := fmt.Sprintf("  timer %s key=%s fire=%s hold=%s", ts.Stream.Family, formatKey(tm.Key), formatTS(tm.Fire), formatTS(tm.Hold))
			if len(tm.Tag) > 0 {
				line += " tag=" + string(tm.Tag)
			}
			if w := formatWindows(in.win, tm.NumWindows, tm.Windows); w != "" {
				line += " window=" + strings.TrimSpace(w)
			}
			lines = append(lines, line)
		})
		if err != nil {
			return nil, fmt.Errorf("bundle %d: timers of %s: %w", b.ID, ts.Stream.Family, err)
		}
	}
	return lines, nil
}

// eachTimer calls f with each timer encoded in data, and its bytes.
func eachTimer(data []byte, codec *coders.TimerCodec, f func(tm *coders.Timer, raw []byte)) error {
	var tm coders.Timer
	for off := 0; off < len(data); {
		n, err := codec.Parse(data[off:], &tm)
		if err != nil {
			return err
		}
		f(&tm, data[off:off+n])
		off += n
	}
	return nil
}

// bundleResult is what commit and split lines say a bundle produced.
type bundleResult struct {
	data      map[string][][]byte
	timers    map[TimerStream][][]byte
	residuals []Residual
	primary   [][]byte
}

// parseResult reads the input lines of commit or split, each starting
// with one of allowed:
//
//	output PCOLL ELEMENTS...                      elements written to PCOLL
//	timer FAMILY KEY fire=T [hold=T] [tag=S] [window=W]  a timer set (hold defaults to fire)
//	clear FAMILY KEY [tag=S] [window=W]           a timer cleared
//	residual ELEMENT [delay=MS] [hold=T]          unfinished input, to resume
//	primary ELEMENT...                            what a split bundle keeps of its split element
func (s *script) parseResult(td *datadriven.TestData, b *Bundle, allowed ...string) (*bundleResult, error) {
	r := &bundleResult{data: map[string][][]byte{}, timers: map[TimerStream][][]byte{}}
	for i, line := range strings.Split(td.Input, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s, line %d", td.Pos, i+1)
		cmd, args, err := datadriven.ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if !slices.Contains(allowed, cmd) {
			return nil, fmt.Errorf("%s: %q here; want one of %s", where, cmd, strings.Join(allowed, ", "))
		}
		a := newLineArgs(where, args)
		s.resultLine(r, b, cmd, a)
		if err := a.finish(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (s *script) resultLine(r *bundleResult, b *Bundle, cmd string, a *lineArgs) {
	in, err := s.p.mainInput(b.Stage)
	if err != nil {
		a.fail(err)
		return
	}
	switch cmd {
	case "output":
		pc := a.word("PCollection")
		d := s.p.byID[pc]
		if ss, _ := s.p.stageSpec(b.Stage); d == nil || !slices.Contains(ss.Outputs, pc) {
			a.fail(fmt.Errorf("output to %q, which is not an output of stage %s", pc, b.Stage))
			return
		}
		data, err := d.encode(a.rest())
		a.fail(err)
		r.data[pc] = append(r.data[pc], data)
	case "timer", "clear":
		stream, enc := s.parseTimer(b.Stage, in, cmd == "clear", a)
		r.timers[stream] = append(r.timers[stream], enc)
	case "residual":
		el, err := in.encode([]string{a.word("element")})
		a.fail(err)
		held := a.has("hold")
		r.residuals = append(r.residuals, Residual{Element: el, Delay: a.int("delay", 0), Hold: a.ts("hold", 0), Held: held})
	case "primary":
		for _, tok := range a.rest() {
			el, err := in.encode([]string{tok})
			a.fail(err)
			r.primary = append(r.primary, el)
		}
	}
}

// parseTimer encodes a timer line of a stateful stage whose main input is
// in: its windows are in's.
func (s *script) parseTimer(stage string, in *pcollDecl, clear bool, a *lineArgs) (TimerStream, []byte) {
	family, key := a.word("timer family"), a.word("key")
	stream := TimerStream{Transform: stage, Family: family}
	ss, _ := s.p.stageSpec(stage)
	if !slices.ContainsFunc(ss.Timers, func(t TimerSpec) bool { return t.Stream == stream }) {
		a.fail(fmt.Errorf("stage %s has no timer family %q", stage, family))
	}
	tm := &coders.Timer{Key: lp(key), Tag: []byte(a.str("tag", "")), NumWindows: 1, Clear: clear, Pane: coders.NoFiringPane}
	if w := a.str("window", ""); w != "" {
		win, err := parseWindow(w)
		a.fail(err)
		tm.Windows = win
	} else if in.win.windowKind() != coders.GlobalWindow {
		a.fail(fmt.Errorf("timer of %s: window= is needed: %s is not globally windowed", stage, in.id))
	}
	if !clear {
		if !a.has("fire") {
			a.fail(fmt.Errorf("timer needs fire="))
		}
		tm.Fire = a.ts("fire", 0)
		tm.Hold = a.ts("hold", tm.Fire)
	}
	return stream, coders.AppendTimer(nil, tm)
}
