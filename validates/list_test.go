package validates

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	in := "# header\n\nTestA\n  TestB   # why B\nTestC/sub_1\n"
	got, err := ParseList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TestA", "TestB", "TestC/sub_1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseListErrors(t *testing.T) {
	for _, in := range []string{
		"TestA\nTestA\n", // duplicate
		"NotATest\n",     // not a test name
		"TestA TestB\n",  // two names on a line
		"TestA|TestB\n",  // regex, not a name
	} {
		if _, err := ParseList(strings.NewReader(in)); err == nil {
			t.Errorf("ParseList(%q): want error", in)
		}
	}
}

// The checked-in list must parse and hold at least 14 tests: a list emptied
// by mistake would let every run pass.
func TestExpectedGoListParses(t *testing.T) {
	f, err := os.Open("expected_go.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := ParseList(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 14 {
		t.Errorf("expected_go.txt lists %d tests, want at least 14", len(names))
	}
}

func TestRunRegex(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"TestA"}, "^(TestA)$"},
		{[]string{"TestA", "TestB/x", "TestB/y"}, "^(TestA|TestB)$"},
		{[]string{"TestWindowSums_GBK"}, "^(TestWindowSums_GBK)$"},
	}
	for _, c := range cases {
		if got := RunRegex(c.in); got != c.want {
			t.Errorf("RunRegex(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParsePythonList(t *testing.T) {
	got, err := ParsePythonList(strings.NewReader("# c\ntest_a  # why\n\ntest_b_2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"test_a", "test_b_2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, in := range []string{
		"test_a\ntest_a\n",          // duplicate
		"TestA\n",                   // a Go name
		"PrismRunnerTest::test_a\n", // a node id, not a method
		"test_a test_b\n",           // two names on a line
		"PrismRunnerTest.test_a\n",  // qualified
	} {
		if _, err := ParsePythonList(strings.NewReader(in)); err == nil {
			t.Errorf("ParsePythonList(%q): want error", in)
		}
	}
}

func TestParsePythonClassList(t *testing.T) {
	got, err := ParsePythonClassList(strings.NewReader("# c\nWindowTest/test_a  # why\n\nRunnerApiTest/test_a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"WindowTest/test_a", "RunnerApiTest/test_a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, in := range []string{
		"test_a\n",                               // no class
		"WindowTest/test_a\nWindowTest/test_a\n", // duplicate
		"WindowTest::test_a\n",                   // a node id
		"WindowTest/helper\n",                    // not a test method
		"a.WindowTest/test_a\n",                  // module-qualified
	} {
		if _, err := ParsePythonClassList(strings.NewReader(in)); err == nil {
			t.Errorf("ParsePythonClassList(%q): want error", in)
		}
	}
}

// The checked-in Python list must parse and hold the suite's core tests.
func TestExpectedPythonListParses(t *testing.T) {
	f, err := os.Open("expected_python.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := ParsePythonList(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 60 {
		t.Errorf("expected_python.txt lists %d tests, want at least 60", len(names))
	}
}

// The checked-in windowing list must parse and hold Beam's custom-window
// tests, which the harness runs through a shim of their own.
func TestExpectedWindowingListParses(t *testing.T) {
	f, err := os.Open("expected_windowing.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := ParsePythonClassList(f)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, n := range []string{"WindowTest/test_custom_windows", "WindowTest/test_sessions",
		"CustomWindowsPrismTest/test_custom_merging_window", "CustomWindowsPrismTest/test_custom_window_type"} {
		if !have[n] {
			t.Errorf("expected_windowing.txt lacks %s", n)
		}
	}
}
