package workers

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestWorkersPerEnv(t *testing.T) {
	key := "beam:option:workers_per_environment:v1"
	goEnv := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"}}
	pyEnv := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}}
	loopback := "beam:option:environment_type:v1"
	for _, tc := range []struct {
		opts    map[string]any
		env     *pipepb.Environment
		want    int
		wantErr bool
	}{
		{opts: nil, want: runtime.NumCPU()},
		{opts: map[string]any{key: "3"}, want: 3}, // Python sends ints as strings
		{opts: map[string]any{key: 4.0}, want: 4}, // a JSON number
		{opts: map[string]any{"workers_per_environment": "2"}, want: 2},
		{opts: map[string]any{key: "0"}, wantErr: true},
		{opts: map[string]any{key: "many"}, wantErr: true},
		{opts: map[string]any{key: 1.5}, wantErr: true},
		{opts: map[string]any{key: "100000"}, wantErr: true},
		// Python LOOPBACK harnesses share the client's interpreter: one by
		// default, as many as asked for; processes or Go: the cores.
		{opts: map[string]any{loopback: "LOOPBACK"}, env: pyEnv, want: 1},
		{opts: map[string]any{loopback: "loopback", key: "3"}, env: pyEnv, want: 3},
		{opts: map[string]any{loopback: "LOOPBACK", "beam:option:experiments:v1": []any{"use_loopback_process_worker"}}, env: pyEnv, want: runtime.NumCPU()},
		{opts: map[string]any{loopback: "EXTERNAL"}, env: pyEnv, want: runtime.NumCPU()},
		{opts: map[string]any{"environment_type": "LOOPBACK"}, env: goEnv, want: runtime.NumCPU()},
	} {
		s, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PerEnv(s, tc.env)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("%v: got %d, %v; want %d (error %v)", tc.opts, got, err, tc.want, tc.wantErr)
		}
	}
}

// Bundles go to the least busy harness, lowest index first on ties.
func TestWorkerSetSpreadsBundles(t *testing.T) {
	ws := newSet(make([]*harness.Harness, 3))
	acquire := func() int {
		i, _, err := ws.acquire(t.Context(), Placement{})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	var got []int
	for i := 0; i < 4; i++ {
		got = append(got, acquire())
	}
	if want := []int{0, 1, 2, 0}; !equalInts(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	ws.update(func(b *placement.Board) { b.Release(1) })
	if i := acquire(); i != 1 {
		t.Fatalf("after harness 1 finished a bundle, the next went to %d", i)
	}
}

// A retried bundle avoids the workers named where its user code failed,
// by their ids, while another is up.
func TestWorkerSetPlacesBundles(t *testing.T) {
	var hs []*harness.Harness
	for _, id := range []string{"w0", "w1", "w2"} {
		hs = append(hs, harness.New(&fnapi.Worker{ID: id}))
	}
	ws := newSet(hs)
	for _, tc := range []struct {
		avoid []string
		lane  int
		want  int
	}{
		{nil, 0, 0}, {[]string{"w1"}, 0, 2}, {[]string{"w0", "w2"}, 0, 1}, {[]string{"w0", "w1", "w2"}, 0, 0},
		// A key lane's slot, however busy, unless avoided.
		{nil, 1, 0}, {nil, 3, 2}, {[]string{"w2"}, 3, 1},
	} {
		i, _, err := ws.acquire(t.Context(), Placement{Avoid: tc.avoid, Lane: tc.lane})
		if err != nil || i != tc.want {
			t.Errorf("avoiding %v, lane %d: harness %d (%v), want %d", tc.avoid, tc.lane, i, err, tc.want)
		}
	}
}

// A bundle of a remote environment waits while its workers start, runs
// once one connects, and fails, naming every pool, once all are down.
func TestWorkerSetWaitsForPools(t *testing.T) {
	ws := newBoardSet("python", placement.NewBoard([]string{"h1:50000", "h2:50000"}, []int{1, 1}))
	type got struct {
		i   int
		err error
	}
	acquire := func() chan got {
		ch := make(chan got, 1)
		go func() {
			i, _, err := ws.acquire(t.Context(), Placement{})
			ch <- got{i, err}
		}()
		return ch
	}
	first := acquire()
	select {
	case g := <-first:
		t.Fatalf("a bundle ran (%v) before any worker connected", g)
	case <-time.After(50 * time.Millisecond):
	}
	ws.update(func(b *placement.Board) { b.Connected(1) })
	if g := testwait.Recv(t, 10*time.Second, "the bundle to run once slot 1 connected", first); g.err != nil || g.i != 1 {
		t.Fatalf("after slot 1 connected: %+v", g)
	}
	ws.update(func(b *placement.Board) { b.Release(1); b.Lost(1) })
	second := acquire()
	ws.update(func(b *placement.Board) { b.MarkDown(0, "refused") })
	ws.update(func(b *placement.Board) { b.MarkDown(1, "timed out") })
	g := testwait.Recv(t, 10*time.Second, "the bundle to fail once every pool is down", second)
	var none *placement.NoPoolLeft
	if !errors.As(g.err, &none) || !strings.Contains(g.err.Error(), "h1:50000 (refused); h2:50000 (timed out)") {
		t.Fatalf("with every pool down: %+v", g)
	}
}

func TestWorkerSetRoutesByInstructionKey(t *testing.T) {
	hs := []*harness.Harness{harness.New(nil), harness.New(nil)}
	ws := newSet(hs)
	h, inst, err := ws.route(instKey(1, "b-7"))
	if err != nil || h != hs[1] || inst != "b-7" {
		t.Fatalf("route = %p %q %v, want harness 1 and b-7", h, inst, err)
	}
	for _, bad := range []string{"b-7", "2/b-7", "-1/b", "x/b", ""} {
		if _, _, err := ws.route(bad); err == nil {
			t.Errorf("route(%q) accepted", bad)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSDKCheckpointsExactly: the runner checkpoints bundles by time only
// for SDKs that stop exactly at a checkpoint; Go 2.77's does not.
func TestSDKCheckpointsExactly(t *testing.T) {
	for base, want := range map[string]bool{
		"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0":      false,
		"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0": true,
		"beam:version:sdk_base:apache/beam_java17_sdk:2.73.0":     true,
		"": true,
	} {
		env := &pipepb.Environment{Capabilities: []string{"beam:coder:bytes:v1"}}
		if base != "" {
			env.Capabilities = append(env.Capabilities, base)
		}
		if got := SDKCheckpointsExactly(env); got != want {
			t.Errorf("SDKCheckpointsExactly(%q) = %v, want %v", base, got, want)
		}
	}
}
