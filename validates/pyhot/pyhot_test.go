package pyhot

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	v := Value(nil, 0x0102030405060708, 20)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4}
	if !bytes.Equal(v, want) {
		t.Errorf("Value = %v, want %v", v, want)
	}
}

// The checksum sums each value's CRC-32: order does not matter, a lost or
// repeated value does.
func TestExpected(t *testing.T) {
	s := Expected(3, 16)
	if s.Key != HotKey || s.Count != 3 || s.Bytes != 48 {
		t.Errorf("Expected(3, 16) = %+v", s)
	}
	if Expected(2, 16).CRC32Sum == s.CRC32Sum || Expected(0, 16).CRC32Sum != 0 {
		t.Error("checksum does not depend on the values")
	}
}

// The Python pipeline and Expected follow the same rule: run it on the
// DirectRunner, small.
func TestExpectedMatchesThePipeline(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found: setup installs apache-beam (scripts/setup.sh)")
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(py, "hotkey_pipeline.py", "--values=3000", "--value_size=64", "--output="+out, "--runner=DirectRunner")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The DirectRunner holds every value in memory: a plain list.
	want := Expected(3000, 64)
	want.Iterable = "list"
	if got != want {
		t.Errorf("DirectRunner summary %v, want %v", got, want)
	}
}

func TestParse(t *testing.T) {
	line := "key=hot count=3 bytes=48 crc32sum=123 iterable=_ConcatSequence"
	s, err := Parse(line)
	if err != nil || s != (Summary{Key: "hot", Count: 3, Bytes: 48, CRC32Sum: 123, Iterable: "_ConcatSequence"}) {
		t.Fatalf("Parse(%q) = %+v, %v", line, s, err)
	}
	if s.String() != line {
		t.Errorf("String() = %q, want %q", s.String(), line)
	}
	for _, bad := range []string{
		"", "key=hot count=3", "key=hot count=x bytes=48 crc32sum=1 iterable=list",
		"key=hot count=3 bytes=48 crc32sum=-1 iterable=list", "key=hot count=3 bytes=48 crc32sum=1 list",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) gave no error", bad)
		}
	}
}

func TestJudge(t *testing.T) {
	want := Expected(4, 8)
	good := want
	good.Iterable = stateBackedType
	if err := Judge(good, want, 100<<10, 512<<10); err != nil {
		t.Errorf("good run: %v", err)
	}
	for name, tc := range map[string]struct {
		got      Summary
		peak     int64
		mentions string
	}{
		"lost value":   {Summary{HotKey, 3, 24, want.CRC32Sum, stateBackedType}, 1, "count=3"},
		"wrong value":  {Summary{HotKey, 4, 32, want.CRC32Sum + 1, stateBackedType}, 1, "crc32sum"},
		"inline list":  {Summary{HotKey, 4, 32, want.CRC32Sum, "list"}, 1, "inline"},
		"too much RSS": {good, 600 << 10, "600 MiB"},
	} {
		err := Judge(tc.got, want, tc.peak, 512<<10)
		if err == nil || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("%s: Judge = %v, want an error mentioning %q", name, err, tc.mentions)
		}
	}
}
