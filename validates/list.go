// Package validates holds the pure parts of the ValidatesRunner harness:
// parsing the expected-test list and test results, deciding pass/fail, and
// printing the report. The I/O (building binaries, running the job server and
// the tests) lives in validates/cmd/validates.
package validates

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// goTestName matches a Go test name, optionally with subtests, so typos in
// the list are caught before a long run rather than reported as "did not
// run".
var goTestName = regexp.MustCompile(`^Test[A-Za-z0-9_]*(/\S+)?$`)

// pyTestName matches a unittest test method (unittest runs methods whose
// names start with "test").
var pyTestName = regexp.MustCompile(`^test[A-Za-z0-9_]*$`)

// pyClassTestName matches a test method qualified by its class.
var pyClassTestName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*/test[A-Za-z0-9_]*$`)

// ParseList reads a list of Go test names: one per line, '#' starts a
// comment, blank lines are ignored. Duplicates and malformed names are errors
// because they always indicate a mistake in a hand-edited file.
func ParseList(r io.Reader) ([]string, error) {
	return parseNames(r, goTestName, "a Go test name")
}

// ParsePythonList reads a list of Python unittest method names in the same
// format as ParseList.
func ParsePythonList(r io.Reader) ([]string, error) {
	return parseNames(r, pyTestName, "a Python test method name")
}

// ParsePythonClassList reads a list of Python test methods qualified by
// their class, "Class/test_method", for suites of several classes.
func ParsePythonClassList(r io.Reader) ([]string, error) {
	return parseNames(r, pyClassTestName, "a Python test named Class/method")
}

func parseNames(r io.Reader, valid *regexp.Regexp, what string) ([]string, error) {
	var names []string
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		name := sc.Text()
		if i := strings.IndexByte(name, '#'); i >= 0 {
			name = name[:i]
		}
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !valid.MatchString(name) {
			return nil, fmt.Errorf("line %d: %q is not %s", line, name, what)
		}
		if prev, dup := seen[name]; dup {
			return nil, fmt.Errorf("line %d: %s already listed on line %d", line, name, prev)
		}
		seen[name] = line
		names = append(names, name)
	}
	return names, sc.Err()
}

// RunRegex returns a -test.run pattern that selects exactly the given
// top-level tests (subtest parts of names are dropped: running the parent
// runs its subtests). It returns "" for no names.
func RunRegex(names []string) string {
	var tops []string
	seen := map[string]bool{}
	for _, n := range names {
		top, _, _ := strings.Cut(n, "/")
		if !seen[top] {
			seen[top] = true
			tops = append(tops, regexp.QuoteMeta(top))
		}
	}
	if len(tops) == 0 {
		return ""
	}
	return "^(" + strings.Join(tops, "|") + ")$"
}
