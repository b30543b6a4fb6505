package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/scripttest"
	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the engine scenarios in testdata/*.txt, one file per
// behaviour, written in the language testdata/README.md describes. The
// expected outputs were written with -rewrite and then checked by hand
// against Beam's model: a changed output is a changed behaviour.
func TestScripts(t *testing.T) {
	scripttest.Run(t, func() func(*testing.T, *datadriven.TestData) string { return (&script{}).run })
}

// engineAPI is the scripts' one door into the engine: every call they
// make to drive it goes through here, so a change of the driver-facing
// API changes this type and nothing else.
type engineAPI struct {
	e *Engine
	// expiredBuf holds what Ready handed out with bundles, until the
	// script asks for it with expired.
	expiredBuf []StateWindow
	// last is the Ready read last, which the next ready acknowledges.
	last Ready
}

func newEngineAPI(spec Spec) (*engineAPI, error) {
	e, err := New(spec)
	return &engineAPI{e: e}, err
}

func restoreEngineAPI(spec Spec, snap []byte) (*engineAPI, error) {
	e, err := Restore(spec, snap)
	return &engineAPI{e: e}, err
}

// ready hands out what Ready returns as bundles; its expired windows wait
// for expired, its splits (decided by drain, returned there) are none.
func (a *engineAPI) ready() []*Bundle {
	a.e.Advance(a.last)
	r := a.e.Ready()
	a.last = r
	a.expiredBuf = append(a.expiredBuf, r.Expired...)
	out := make([]*Bundle, len(r.Bundles))
	for i := range r.Bundles {
		out[i] = &r.Bundles[i]
	}
	return out
}
func (a *engineAPI) commit(id int, r Result) error            { return a.e.Commit(id, r) }
func (a *engineAPI) fail(id int)                              { a.e.Fail(id) }
func (a *engineAPI) retry(id int, f Failure) (bool, string)   { return a.e.Retry(id, f) }
func (a *engineAPI) split(id int, r SplitResult) (int, error) { return a.e.ApplySplit(id, r) }
func (a *engineAPI) owned(id int) ([][]byte, error)           { return a.e.ownedInput(id) }
func (a *engineAPI) advanceProcessingTime(now int64)          { a.e.AdvanceProcessingTime(now) }

// splitRequests is what a Tick decides, read without handing out bundles.
func (a *engineAPI) splitRequests() []SplitRequest { return a.e.splitRequests() }

// drain is Drain and the checkpoints it queues for the next Ready.
func (a *engineAPI) drain() []SplitRequest {
	a.e.Drain()
	out := a.e.splits
	a.e.splits, a.last.Splits = nil, nil
	return out
}
func (a *engineAPI) expired() []StateWindow {
	// Those the last Ready read are in expiredBuf already.
	rest := a.e.flow.expired[len(a.last.Expired):]
	sortStateWindows(rest)
	out := append(a.expiredBuf, rest...)
	a.expiredBuf, a.e.flow.expired, a.last.Expired = nil, nil, nil
	return out
}
func (a *engineAPI) wakeup() (int64, bool)             { return a.e.flow.nextWakeup() }
func (a *engineAPI) noteWork(stage string, work int64) { a.e.NoteWork(stage, work) }
func (a *engineAPI) watermark(pc string) int64         { return a.e.Watermark(pc) }
func (a *engineAPI) now() int64                        { return processingTime(a.e) }
func (a *engineAPI) status() (inFlight int, done bool, err error) {
	return bundlesInFlight(a.e), a.e.flow.done(), a.e.flow.err
}
func (a *engineAPI) draining() bool { return isDraining(a.e) }

// snapshot is taken, as the driver takes it, with what the last Ready
// handed out acknowledged.
func (a *engineAPI) snapshot(requeueFlight bool) ([]byte, error) {
	a.e.acknowledge(a.last)
	a.last = Ready{}
	if requeueFlight {
		return a.e.SnapshotRequeuingFlight()
	}
	return a.e.snapshotAtRest()
}

// script is one script's state: the pipeline, its engine, the bundles
// it handed out (whether the engine still has them is the engine's to
// say), and the last snapshot.
type script struct {
	p       *scriptPipeline
	eng     *engineAPI
	bundles map[int]*Bundle
	snap    []byte
}

// command runs one directive. An error is a mistake in the script, not
// the engine's: the engine's errors are output.
type command func(s *script, td *datadriven.TestData) (string, error)

var commands = map[string]command{
	"pipeline": (*script).pipeline, "ready": (*script).ready, "commit": (*script).commit,
	"fail": (*script).fail, "retry": (*script).retry, "split": (*script).split, "owned": (*script).owned,
	"advance-processing-time": (*script).advance, "split-requests": (*script).splitRequests,
	"drain": (*script).drain, "expired": (*script).expired, "wakeup": (*script).wakeup,
	"watermarks": (*script).watermarks, "status": (*script).status, "snapshot": (*script).snapshot,
	"restore": (*script).restore, "note-work": (*script).noteWork, "sent": (*script).sent,
	"dropped": (*script).dropped, "cap-bundles": (*script).capBundles,
}

func (s *script) run(t *testing.T, td *datadriven.TestData) string {
	cmd, ok := commands[td.Cmd]
	if !ok {
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	if s.p == nil && td.Cmd != "pipeline" {
		td.Fatalf(t, "%s before any pipeline started", td.Cmd)
	}
	var before error
	if s.p != nil {
		_, _, before = s.eng.status()
	}
	out, err := cmd(s, td)
	if err != nil && !strings.HasPrefix(err.Error(), td.Pos) {
		td.Fatalf(t, "%v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	// A failure the engine found while processing shows where it happened.
	if s.p != nil {
		if _, _, after := s.eng.status(); after != nil && before == nil && !strings.Contains(out, after.Error()) {
			out += "\nengine failed: " + after.Error()
		}
	}
	return out
}

func (s *script) pipeline(td *datadriven.TestData) (string, error) {
	p, err := parsePipeline(td)
	if err != nil {
		return "", err
	}
	eng, err := newEngineAPI(p.spec)
	if err != nil {
		s.p = nil // later directives need a pipeline that started
		return "error: " + err.Error(), nil
	}
	s.p, s.eng, s.bundles, s.snap = p, eng, map[int]*Bundle{}, nil
	return "ok", nil
}

// ready prints the bundles the engine hands out now.
func (s *script) ready(td *datadriven.TestData) (string, error) {
	if err := newLineArgs(td.Pos, td.CmdArgs).finish(); err != nil {
		return "", err
	}
	var out []string
	for _, b := range s.eng.ready() {
		s.bundles[b.ID] = b
		lines, err := s.formatBundle(b)
		if err != nil {
			return "", err
		}
		out = append(out, lines...)
	}
	if len(out) == 0 {
		return "no bundles", nil
	}
	return strings.Join(out, "\n"), nil
}

// commit ID, with output, timer, clear and residual lines: the bundle's
// result.
func (s *script) commit(td *datadriven.TestData) (string, error) {
	b, err := s.bundleArg(td)
	if err != nil {
		return "", err
	}
	r, err := s.parseResult(td, b, "output", "timer", "clear", "residual")
	if err != nil {
		return "", err
	}
	return okOr(s.eng.commit(b.ID, Result{Data: r.data, Timers: r.timers, Residuals: r.residuals})), nil
}

// split ID [first-residual=N] [checkpoint], with primary and residual
// lines: what the SDK reported a split of the bundle gave up; checkpoint:
// the split asked it to keep nothing.
func (s *script) split(td *datadriven.TestData) (string, error) {
	b, a, err := s.bundleArgs(td)
	if err != nil {
		return "", err
	}
	first := int(a.int("first-residual", -1))
	ckpt := a.flag("checkpoint")
	if err := a.finish(); err != nil {
		return "", err
	}
	r, err := s.parseResult(td, b, "primary", "residual")
	if err != nil {
		return "", err
	}
	n, err := s.eng.split(b.ID, SplitResult{FirstResidual: first, Primary: r.primary, Residuals: r.residuals, Checkpoint: ckpt})
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return fmt.Sprintf("filed %d residuals", n), nil
}

func (s *script) fail(td *datadriven.TestData) (string, error) {
	b, err := s.bundleArg(td)
	if err != nil {
		return "", err
	}
	s.eng.fail(b.ID)
	return "ok", nil
}

// retry ID [user=CAUSE] [worker=W] [workers=N]: the attempt failed in
// user code raising CAUSE on worker W (of N, default 2), or else its
// worker was lost.
func (s *script) retry(td *datadriven.TestData) (string, error) {
	b, a, err := s.bundleArgs(td)
	if err != nil {
		return "", err
	}
	f := Failure{User: a.has("user"), Workers: int(a.int("workers", 2))}
	f.Cause, f.Worker = a.str("user", ""), a.str("worker", "w1")
	if err := a.finish(); err != nil {
		return "", err
	}
	again, why := s.eng.retry(b.ID, f)
	if again {
		return "runs again", nil
	}
	return why, nil
}

// owned ID prints the input the bundle still owns after its splits.
func (s *script) owned(td *datadriven.TestData) (string, error) {
	b, err := s.bundleArg(td)
	if err != nil {
		return "", err
	}
	in, err := s.eng.owned(b.ID)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	decl, err := s.p.mainInput(b.Stage)
	if err != nil {
		return "", err
	}
	lines, err := decl.format(in)
	if len(lines) == 0 {
		return "nothing", err
	}
	return strings.Join(lines, "\n"), err
}

// advance-processing-time T (absolute) or +D (relative).
func (s *script) advance(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	w := a.word("time")
	if err := a.finish(); err != nil {
		return "", err
	}
	to, err := strconv.ParseInt(strings.TrimPrefix(w, "+"), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%s: time %q: %w", td.Pos, w, err)
	}
	if strings.HasPrefix(w, "+") {
		to += s.eng.now()
	}
	s.eng.advanceProcessingTime(to)
	return fmt.Sprintf("now=%s", formatTS(s.eng.now())), nil
}

func (s *script) splitRequests(*datadriven.TestData) (string, error) {
	return formatSplitRequests(s.eng.splitRequests()), nil
}

func (s *script) drain(*datadriven.TestData) (string, error) {
	return formatSplitRequests(s.eng.drain()), nil
}

func formatSplitRequests(rs []SplitRequest) string {
	if len(rs) == 0 {
		return "none"
	}
	var out []string
	for _, r := range rs {
		if r.Fraction == 0 {
			out = append(out, fmt.Sprintf("checkpoint bundle %d", r.Bundle))
		} else {
			out = append(out, fmt.Sprintf("split bundle %d keeping %g", r.Bundle, r.Fraction))
		}
	}
	return strings.Join(out, "\n")
}

// expired prints the state windows the engine says are garbage now.
func (s *script) expired(*datadriven.TestData) (string, error) {
	var out []string
	for _, w := range s.eng.expired() {
		decl, err := s.p.mainInput(w.Stage)
		if err != nil {
			return "", err
		}
		line := fmt.Sprintf("state of stage %s key %s", w.Stage, formatKey(w.Key))
		if win := formatWindows(decl.win, 1, w.Window); win != "" {
			line += " window" + win
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return "none", nil
	}
	return strings.Join(out, "\n"), nil
}

func (s *script) wakeup(*datadriven.TestData) (string, error) {
	at, ok := s.eng.wakeup()
	if !ok {
		return "no wakeup", nil
	}
	return "wake at " + formatTS(at), nil
}

// watermarks [PCOLL...] prints the PCollections' watermarks, in
// declaration order.
func (s *script) watermarks(td *datadriven.TestData) (string, error) {
	want := newLineArgs(td.Pos, td.CmdArgs).rest()
	var out []string
	for _, d := range s.p.pcolls {
		if len(want) == 0 || slices.Contains(want, d.id) {
			out = append(out, fmt.Sprintf("%s: %s", d.id, formatTS(s.eng.watermark(d.id))))
		}
	}
	for _, w := range want {
		if s.p.byID[w] == nil {
			return "", fmt.Errorf("%s: watermarks of undeclared PCollection %q", td.Pos, w)
		}
	}
	return strings.Join(out, "\n"), nil
}

// dropped lists what each GroupByKey stage dropped as late or closed.
func (s *script) dropped(*datadriven.TestData) (string, error) {
	d := s.eng.e.Dropped()
	if len(d) == 0 {
		return "none", nil
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(d)) {
		out = append(out, fmt.Sprintf("%s: late=%d closed=%d", id, d[id].Late, d[id].Closed))
	}
	return strings.Join(out, "\n"), nil
}

func (s *script) status(*datadriven.TestData) (string, error) {
	inFlight, done, err := s.eng.status()
	out := fmt.Sprintf("now=%s in-flight=%d done=%v", formatTS(s.eng.now()), inFlight, done)
	if s.eng.draining() {
		out += " draining"
	}
	if err != nil {
		out += "\nengine failed: " + err.Error()
	}
	return out, nil
}

// snapshot [requeue-flight] keeps the engine's snapshot for restore.
func (s *script) snapshot(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	requeue := a.flag("requeue-flight")
	if err := a.finish(); err != nil {
		return "", err
	}
	snap, err := s.eng.snapshot(requeue)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	s.snap = snap
	return "ok", nil
}

// restore replaces the engine by one restored from the last snapshot, as
// after a restart: bundles handed out before are forgotten.
func (s *script) restore(td *datadriven.TestData) (string, error) {
	if s.snap == nil {
		return "", fmt.Errorf("%s: restore without a snapshot", td.Pos)
	}
	eng, err := restoreEngineAPI(s.p.spec, s.snap)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	s.eng, s.bundles = eng, map[int]*Bundle{}
	return "ok", nil
}

// note-work STAGE N reports N elements of work done by the stage.
func (s *script) noteWork(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	stage, n := a.word("stage"), a.word("work")
	work, err := strconv.ParseInt(n, 10, 64)
	a.fail(err)
	if err := a.finish(); err != nil {
		return "", err
	}
	s.eng.noteWork(stage, work)
	return "ok", nil
}

// cap-bundles STAGE N: autoscaling moved the stage's workers to N
// (Engine.CapBundles).
func (s *script) capBundles(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	stage, n := a.word("stage"), a.word("bundles")
	cap, err := strconv.Atoi(n)
	a.fail(err)
	if err := a.finish(); err != nil {
		return "", err
	}
	return strconv.FormatBool(s.eng.e.CapBundles(stage, cap)), nil
}

// sent ID BYTES: the bundle has sent BYTES of output so far.
func (s *script) sent(td *datadriven.TestData) (string, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	id, n := a.word("bundle"), a.word("bytes")
	b, err := strconv.Atoi(id)
	a.fail(err)
	bytes, err := strconv.ParseInt(n, 10, 64)
	a.fail(err)
	if err := a.finish(); err != nil {
		return "", err
	}
	s.eng.e.NoteOutput(b, bytes)
	return "ok", nil
}

func okOr(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}
