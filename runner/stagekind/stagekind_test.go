package stagekind

import "testing"

// Snapshots store kinds by number and the UI shows their names: both are
// fixed.
func TestKindsKeepTheirNumbersAndNames(t *testing.T) {
	want := []struct {
		k    Kind
		n    int
		name string
	}{{SDK, 0, "sdk"}, {Impulse, 1, "impulse"}, {GBK, 2, "gbk"}, {Flatten, 3, "flatten"}, {TestStream, 4, "teststream"}}
	for _, w := range want {
		if int(w.k) != w.n || w.k.String() != w.name {
			t.Errorf("kind %d %q, want %d %q", int(w.k), w.k, w.n, w.name)
		}
	}
	if got := Kind(99).String(); got != "unknown" {
		t.Errorf("Kind(99) = %q, want unknown", got)
	}
}
