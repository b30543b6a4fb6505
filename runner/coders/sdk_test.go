package coders

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Test helpers: every expectation in this package's tests comes from the
// real Go SDK coders, so a mismatch means we disagree with an SDK.

// marshal turns an SDK coder into the proto map the runner receives.
func marshal(t testing.TB, c *coder.Coder) (map[string]*pipepb.Coder, string) {
	t.Helper()
	m := graphx.NewCoderMarshaller()
	id, err := m.Add(c)
	if err != nil {
		t.Fatalf("marshal %v: %v", c, err)
	}
	return m.Build(), id
}

func sdkEncode(t testing.TB, c *coder.Coder, fv *exec.FullValue) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := exec.MakeElementEncoder(c).Encode(fv, &buf); err != nil {
		t.Fatalf("sdk encode %v with %v: %v", fv, c, err)
	}
	return buf.Bytes()
}

func mustCompile(t testing.TB, coders map[string]*pipepb.Coder, id string) *Codec {
	t.Helper()
	c, err := Compile(coders, id)
	if err != nil {
		t.Fatalf("Compile(%q): %v", id, err)
	}
	return c
}

// point is a user type with a custom coder, which the Go SDK marshals as
// length_prefix(beam:go:coder:custom:v1).
type point struct{ X, Y int64 }

func customPointCoder(t testing.TB) *coder.Coder {
	enc := func(p point) []byte { return AppendVarint(AppendVarint(nil, p.X), p.Y) }
	dec := func(b []byte) point {
		x, n, _ := Varint(b)
		y, _, _ := Varint(b[n:])
		return point{x, y}
	}
	pt := reflect.TypeOf(point{})
	cc, err := coder.NewCustomCoder("point", pt, enc, dec)
	if err != nil {
		t.Fatal(err)
	}
	return &coder.Coder{Kind: coder.Custom, T: typex.New(pt), Custom: cc}
}

func randString(r *rand.Rand) string {
	b := make([]byte, r.Intn(300))
	r.Read(b)
	return string(b)
}

// randInt favours edge values: negative varints take 10 bytes.
func randInt(r *rand.Rand) int64 {
	switch r.Intn(4) {
	case 0:
		return -r.Int63()
	case 1:
		return int64(r.Intn(300))
	}
	return r.Int63()
}

func randTime(r *rand.Rand) mtime.Time {
	switch r.Intn(5) {
	case 0:
		return mtime.MinTimestamp
	case 1:
		return mtime.EndOfGlobalWindowTime
	}
	return mtime.Time(r.Int63n(1<<50) - 1<<49)
}

func randIntervals(r *rand.Rand) []typex.Window {
	ws := make([]typex.Window, 1+r.Intn(3))
	for i := range ws {
		end := mtime.Time(r.Int63n(1<<40) - 1<<39)
		ws[i] = window.IntervalWindow{Start: end - mtime.Time(r.Int63n(1<<30)), End: end}
	}
	return ws
}

// randPane returns a pane the SDK can encode (early panes have on-time
// index -1).
func randPane(r *rand.Rand) typex.PaneInfo {
	p := typex.PaneInfo{IsFirst: r.Intn(2) == 0, IsLast: r.Intn(2) == 0, Timing: typex.PaneTiming(r.Intn(4))}
	switch r.Intn(3) {
	case 0:
	case 1:
		p.Index = int64(r.Intn(1000))
		p.NonSpeculativeIndex = p.Index
	default:
		p.Index = int64(r.Intn(1 << 20))
		p.NonSpeculativeIndex = int64(r.Intn(1000))
	}
	if p.Timing == typex.PaneEarly {
		p.NonSpeculativeIndex = -1
	}
	if p.Timing == typex.PaneUnknown {
		p.Index, p.NonSpeculativeIndex = 0, 0
	}
	return p
}

func toPane(p typex.PaneInfo) PaneInfo {
	return PaneInfo{IsFirst: p.IsFirst, IsLast: p.IsLast, Timing: Timing(p.Timing), Index: p.Index, OnTimeIndex: p.NonSpeculativeIndex}
}
