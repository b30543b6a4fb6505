package main

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/validates"
)

func TestEveryPassed(t *testing.T) {
	pass := func(n string) validates.Result { return validates.Result{Name: n, Status: validates.Pass} }
	for _, tc := range []struct {
		name string
		res  []validates.Result
		want string // in the error; "" for none
	}{
		{"all pass", []validates.Result{pass("TestA"), pass("ExampleW")}, ""},
		{"one fails", []validates.Result{pass("TestA"), {Name: "ExampleW", Status: validates.Fail}}, "1 of 2 tests did not pass: ExampleW: FAIL"},
		{"skip is no pass", []validates.Result{pass("ExampleW"), {Name: "TestB", Status: validates.Skip}}, "TestB: SKIP"},
		{"witness missing", []validates.Result{pass("TestA")}, "ExampleW did not run"},
		{"nothing ran", nil, "ExampleW did not run"},
	} {
		err := everyPassed(tc.res, "ExampleW")
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
