package workers

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

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
