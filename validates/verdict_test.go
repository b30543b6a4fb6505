package validates

import (
	"reflect"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	results := []Result{
		{Name: "TestPass", Status: Pass},
		{Name: "TestFail", Status: Fail},
		{Name: "TestSkip", Status: Skip},
		{Name: "TestHung", Status: Incomplete},
		{Name: "TestExtra", Status: Pass},
		{Name: "TestExtraFail", Status: Fail},
		{Name: "TestPass/sub", Status: Pass}, // parent listed: not reported
		{Name: "TestOther/sub", Status: Pass},
	}
	expected := []string{"TestPass", "TestFail", "TestSkip", "TestHung", "TestMissing"}
	got := Decide(expected, results)
	want := Verdict{
		Failed:   []string{"TestFail", "TestHung"},
		Skipped:  []string{"TestSkip"},
		NotRun:   []string{"TestMissing"},
		Unlisted: []string{"TestExtra", "TestOther/sub"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got.OK() {
		t.Error("OK() = true with failures")
	}
}

func TestDecideOK(t *testing.T) {
	v := Decide([]string{"TestA"}, []Result{{Name: "TestA", Status: Pass}, {Name: "TestB", Status: Fail}})
	if !v.OK() {
		t.Errorf("OK() = false; a failing unlisted test must not fail the run: %+v", v)
	}
	if !strings.Contains(v.String(), "all expected tests passed") {
		t.Errorf("String() = %q", v.String())
	}
}

func TestDecideEmptyExpectedNothingRan(t *testing.T) {
	v := Decide([]string{"TestA"}, nil)
	if v.OK() || !reflect.DeepEqual(v.NotRun, []string{"TestA"}) {
		t.Errorf("got %+v, want TestA not run", v)
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []string{"TestA", "TestGone"}, []Result{
		{Name: "TestA", Status: Pass, Elapsed: 1234567890},
		{Name: "TestB", Status: Skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"TestA", "PASS", "1.23s", "TestB", "SKIP", "TestGone", "NOT RUN"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}
