package validates

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// junitCase is one <testcase> of a JUnit XML report (as written by
// `pytest --junitxml`); presence of a child element gives the outcome.
type junitCase struct {
	Class   string    `xml:"classname,attr"`
	Name    string    `xml:"name,attr"`
	Time    float64   `xml:"time,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// ParseJUnit reads a JUnit XML report and returns its test cases as results,
// each name prefixed with prefix (e.g. "python/") to keep them apart from Go
// tests in the shared table. Both <testsuites> and a bare <testsuite> root
// are accepted: the decoder finds <testcase> elements at any depth.
func ParseJUnit(r io.Reader, prefix string) ([]Result, error) {
	return parseJUnit(r, func(c junitCase) string { return prefix + c.Name })
}

// ParseJUnitByClass is ParseJUnit naming each case "Class/method" after
// prefix, Class the last part of its dotted classname: for a run of several
// test classes, whose methods may share names.
func ParseJUnitByClass(r io.Reader, prefix string) ([]Result, error) {
	return parseJUnit(r, func(c junitCase) string {
		return prefix + c.Class[strings.LastIndexByte(c.Class, '.')+1:] + "/" + c.Name
	})
}

func parseJUnit(r io.Reader, name func(junitCase) string) ([]Result, error) {
	dec := xml.NewDecoder(r)
	var out []Result
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := dec.DecodeElement(&c, &se); err != nil {
			return out, err
		}
		out = append(out, Result{
			Name:    name(c),
			Status:  c.status(),
			Elapsed: time.Duration(c.Time * float64(time.Second)),
		})
	}
}

func (c junitCase) status() Status {
	switch {
	case c.Failure != nil || c.Error != nil:
		return Fail
	case c.Skipped != nil:
		return Skip
	}
	return Pass
}

// ReadSurefireReports reads the TEST-*.xml files Maven Surefire writes
// into dir, in name order, each case named Class/method.
func ReadSurefireReports(dir string) ([]Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "TEST-*.xml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Result
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return out, err
		}
		res, err := ParseJUnitByClass(f, "")
		f.Close()
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, res...)
	}
	return out, nil
}
