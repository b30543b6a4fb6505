package engine

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/snapshot-v*.golden")

// TestSnapshotGolden keeps the format honest: a snapshot written by this
// version, checked in, must still restore and re-encode to the same bytes.
// A change to the format fails it: bump SnapshotVersion, keep reading the
// old version, and add a golden for the new one (go test -run
// TestSnapshotGolden -update).
func TestSnapshotGolden(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	spec := simPipeline(t, r)
	path := filepath.Join("testdata", fmt.Sprintf("snapshot-v%d.golden", SnapshotVersion))
	if *updateGolden {
		s := newSim(t, spec)
		var snap []byte
		for _, op := range simScript(r) {
			s.step(op)
			if bundlesInFlight(s.e) == 0 && s.e.flow.err == nil && !s.e.flow.done() {
				snap = mustSnapshot(t, s.e)
			}
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, snap, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := mustRestore(t, spec, golden)
	if again := mustSnapshot(t, e); !bytes.Equal(again, golden) {
		t.Fatalf("version %d golden snapshot re-encodes differently (%d bytes, was %d)", SnapshotVersion, len(again), len(golden))
	}
	if e.flow.done() {
		t.Error("golden snapshot is of a finished engine: it covers too little state")
	}
	// The same state in older formats restores to the same engine: version
	// 1 (no timers fired early; the golden's state has none), once with a
	// GroupByKey's elements in key order, once in arrival order as they
	// were first written; version 2 (no sort buffers; the state has none).
	for _, name := range []string{"snapshot-v1.golden", "snapshot-v1-arrival.golden", "snapshot-v2.golden"} {
		old, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if again := mustSnapshot(t, mustRestore(t, spec, old)); !bytes.Equal(again, golden) {
			t.Errorf("%s restores to a different state than the version %d golden", name, SnapshotVersion)
		}
	}
}
