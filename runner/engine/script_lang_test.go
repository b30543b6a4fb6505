package engine

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/cockroachdb/datadriven"
)

// A mistake in a script's pipeline is an error naming the line and what
// is wrong with it, never a panic or a silently different pipeline.
func TestScriptPipelineErrors(t *testing.T) {
	for _, tc := range []struct{ directive, input, want string }{
		{"pipeline max-bundles=two", "", "max-bundles=two: not an integer"},
		{"pipeline fast", "", "unexpected fast"},
		{"pipeline", "pcol src", `line 1: unknown declaration "pcol"`},
		{"pipeline", "pcoll src window=fixed(0)", `line 1: window "fixed(0)"`},
		{"pipeline", "pcoll src bytes window=fixed(10)", "bytes PCollections are globally windowed"},
		{"pipeline", "pcoll src\npcoll src", "line 2: PCollection src declared twice"},
		{"pipeline", "pcoll src\nstage s sdk in=src out=dst", `line 2: stage s names undeclared PCollection "dst"`},
		{"pipeline", "pcoll src\nstage s spark in=src", `unknown stage kind "spark"`},
		{"pipeline", "pcoll src\nstage s sdk in=src event-timers=(t)", "has timers but is not keyed"},
		{"pipeline", "pcoll src\nstage s sdk in=src colour=red", "line 2: unknown option colour="},
		{"pipeline", "pcoll src\npcoll out grouped\nstage g gbk in=src out=out trigger=AfterCount(x)", `trigger "AfterCount(x)": unknown trigger "x"`},
		{"pipeline", "pcoll src\npcoll out grouped\nstage g gbk in=src out=out trigger=AfterWatermark(soon=Never)", `not "soon"`},
		{"pipeline", "pcoll src\npcoll out grouped\nstage g gbk in=src out=out trigger=Repeatedly(Never", "want ',' or ')'"},
		{"pipeline", "pcoll src\npcoll out grouped\nstage g gbk in=src out=out closing=never", "closing=never: not one of emit-always, emit-if-nonempty"},
		{"pipeline", "pcoll src\nstage ts teststream out=src\nevent ts add src a:1", `line 3: element "a:1" of src: want value@timestamp`},
		{"pipeline", "pcoll src\nstage ts teststream out=src\nevent ts add src a:1@soon", `timestamp "soon"`},
		{"pipeline", "pcoll src\nstage ts teststream out=src\nevent ts rewind", `unknown event "rewind"`},
		{"pipeline", "pcoll src\nstage s sdk in=src\nevent s watermark src 5", `event for "s", which is not a declared teststream stage`},
	} {
		cmd, args, err := datadriven.ParseLine(tc.directive)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parsePipeline(&datadriven.TestData{Pos: "x.txt:1", Cmd: cmd, CmdArgs: args, Input: tc.input})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.txt:1") {
			t.Errorf("%s\n%s\n: got error %v, want one at x.txt:1 containing %q", tc.directive, tc.input, err, tc.want)
		}
	}
}

// Elements read back as they were written, with the window their
// PCollection's windowing gives them.
func TestScriptElementsRoundTrip(t *testing.T) {
	for _, tc := range []struct{ shape, window, elem, want string }{
		{"kv", "global", "a:x@5", "a:x@5"},
		{"kv", "fixed(10)", "a:''@-3", "a:''@-3 [-10,0)"},
		{"kv", "sessions(4)", "k:v@EOGW", "k:v@EOGW [EOGW," + formatTS(coders.EndOfGlobalWindow+4) + ")"},
		{"bytes", "global", "''@MIN", "''@MIN"},
		{"grouped", "fixed(10)", "a:[1,2]@9", "a:[1,2]@9 [0,10)"},
		{"grouped", "global", "a:[]@MAX", "a:[]@MAX"},
	} {
		win, err := parseWindowFn(tc.window)
		if err != nil {
			t.Fatal(err)
		}
		d := &pcollDecl{id: "p", shape: tc.shape, win: win}
		if d.codec, err = coders.CompileWindowedValue(scriptCoders, d.coderID()); err != nil {
			t.Fatal(err)
		}
		data, err := d.encode([]string{tc.elem})
		if err != nil {
			t.Fatalf("%s: %v", tc.elem, err)
		}
		got, err := d.format([][]byte{data})
		if err != nil || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s %s reads back as %q (%v), want %q", tc.shape, tc.window, tc.elem, got, err, tc.want)
		}
	}
}
