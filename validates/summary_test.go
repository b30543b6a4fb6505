package validates

import "testing"

func TestSummarizeCountsAndExpected(t *testing.T) {
	res := []Result{
		{Name: "S/a", Status: Pass}, {Name: "S/b", Status: Fail},
		{Name: "S/c", Status: Skip}, {Name: "S/d", Status: Incomplete},
		{Name: "S/e", Status: Pass},
	}
	// b fails, c is skipped (not a pass), z never ran.
	s := Summarize("S", res, []string{"S/a", "S/b", "S/c", "S/z"})
	want := Summary{Suite: "S", Pass: 2, Fail: 1, Skip: 1, Other: 1, Expected: 4, ExpectedMet: 1}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if got, want := s.String(), "S: 2 passed, 1 failed, 1 skipped, 1 incomplete; expected tests passing 1/4"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
