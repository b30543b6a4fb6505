package validates

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// A trimmed real test2json stream: a pass, a skip, a failing parent with a
// passing subtest, a test cut off by -test.timeout, and a non-JSON line.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Test":"TestA","Elapsed":1.5}
{"Action":"run","Test":"TestB"}
{"Action":"skip","Test":"TestB","Elapsed":0}
{"Action":"run","Test":"TestC"}
{"Action":"run","Test":"TestC/sub"}
{"Action":"pass","Test":"TestC/sub","Elapsed":0.25}
{"Action":"fail","Test":"TestC","Elapsed":0.5}
not json at all
{"Action":"run","Test":"TestD"}
{"Action":"output","Test":"TestD","Output":"panic: test timed out\n"}
{"Action":"fail","Package":"p","Elapsed":600}
`

func TestParseTest2JSON(t *testing.T) {
	var echo strings.Builder
	got, err := ParseTest2JSON(strings.NewReader(stream), &echo)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Name: "TestA", Status: Pass, Elapsed: 1500 * time.Millisecond},
		{Name: "TestB", Status: Skip},
		{Name: "TestC", Status: Fail, Elapsed: 500 * time.Millisecond},
		{Name: "TestC/sub", Status: Pass, Elapsed: 250 * time.Millisecond},
		{Name: "TestD", Status: Incomplete},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	for _, s := range []string{"=== RUN   TestA\n", "not json at all\n", "panic: test timed out\n"} {
		if !strings.Contains(echo.String(), s) {
			t.Errorf("echo lacks %q:\n%s", s, echo.String())
		}
	}
}

func TestParseJUnit(t *testing.T) {
	const xml = `<?xml version="1.0"?><testsuites><testsuite name="pytest">
<testcase classname="m" name="test_ok" time="2.5"/>
<testcase classname="m" name="test_bad" time="1"><failure message="x">trace</failure></testcase>
<testcase classname="m" name="test_err" time="0"><error message="x"/></testcase>
<testcase classname="m" name="test_skip" time="0"><skipped message="x"/></testcase>
</testsuite></testsuites>`
	got, err := ParseJUnit(strings.NewReader(xml), "python/")
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Name: "python/test_ok", Status: Pass, Elapsed: 2500 * time.Millisecond},
		{Name: "python/test_bad", Status: Fail, Elapsed: time.Second},
		{Name: "python/test_err", Status: Fail, Elapsed: 0},
		{Name: "python/test_skip", Status: Skip, Elapsed: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseJUnitByClass(t *testing.T) {
	const xml = `<testsuites><testsuite name="pytest">
<testcase classname="apache_beam.transforms.window_test.WindowTest" name="test_a" time="1"/>
<testcase classname="apache_beam.transforms.window_test.RunnerApiTest" name="test_a" time="0"><failure/></testcase>
<testcase classname="Bare" name="test_b" time="0"/>
</testsuite></testsuites>`
	got, err := ParseJUnitByClass(strings.NewReader(xml), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Name: "WindowTest/test_a", Status: Pass, Elapsed: time.Second},
		{Name: "RunnerApiTest/test_a", Status: Fail, Elapsed: 0},
		{Name: "Bare/test_b", Status: Pass, Elapsed: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
