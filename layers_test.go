// Package layers_test holds the house's layer order: which folders may
// import which. It reads imports as text (go/parser), so it needs no build
// and sees files of every build tag.
package layers_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/beam-runner/beam-runner/"

// floors ranks the folders: a package may import its own folder's packages
// and those of a lower floor, never a higher or an equal one. The longest
// matching prefix names a package's folder. docs/design.md's layout table
// says the same in words.
var floors = map[string]int{
	"cmd":         9,
	"deploy":      10,
	"bench":       9,
	"validates":   8,
	"testsupport": 7,
	"beamrunner":  7,

	"runner/execute":   6,
	"runner/server":    5,
	"runner/workers":   5,
	"runner/spec":      4,
	"runner/bundleio":  4,
	"runner/web":       4,
	"runner/jobs":      3,
	"runner/engine":    3,
	"runner/plan":      3,
	"runner/userstate": 2,
	"runner/savepoint": 2,
	"runner/coders":    1,
	"runner/metrics":   1,
	"runner/store":     1,
	"runner/artifacts": 1,
	"runner/placement": 1,
	"runner/stagekind": 1,
	"runner/internal":  1,
	"runner/autoscale": 1,

	"worker":     -1,
	"harness":    -1,
	"fnapi":      -2,
	"dataplane":  -3,
	"stateplane": -3,
	"internal":   -4,
}

// testOnly are folders that product code never imports; tests anywhere may.
var testOnly = map[string]bool{"testsupport": true}

// folderOf names the folder of floors that holds dir ("" if none does).
func folderOf(dir string) string {
	best := ""
	for f := range floors {
		if (dir == f || strings.HasPrefix(dir, f+"/")) && len(f) > len(best) {
			best = f
		}
	}
	return best
}

type arrow struct{ file, from, to string }

// imports lists every import of a module package in the tree's Go files.
func imports(t *testing.T) []arrow {
	var out []arrow
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if to, ok := strings.CutPrefix(p, module); ok {
				out = append(out, arrow{file: path, from: filepath.ToSlash(filepath.Dir(path)), to: to})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryArrowPointsDown(t *testing.T) {
	arrows := imports(t)
	if len(arrows) < 100 {
		t.Fatalf("read only %d imports of the module: is the test run from the module root?", len(arrows))
	}
	var bad []string
	for _, a := range arrows {
		from, to := folderOf(a.from), folderOf(a.to)
		switch {
		case from == "" || to == "":
			bad = append(bad, a.file+": "+a.to+": a folder with no floor; add it to floors and to docs/design.md")
		case from == to:
		case testOnly[to] && !strings.HasSuffix(a.file, "_test.go") && floors[from] <= floors[to]:
			bad = append(bad, a.file+": product code imports test support "+a.to)
		case testOnly[to] && strings.HasSuffix(a.file, "_test.go"):
		case floors[from] <= floors[to]:
			bad = append(bad, a.file+": "+from+" imports "+a.to+", not on a lower floor")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestFloorsNameRealFolders keeps the table honest: a folder removed or
// renamed must leave it too.
func TestFloorsNameRealFolders(t *testing.T) {
	for f := range floors {
		if st, err := os.Stat(f); err != nil || !st.IsDir() {
			t.Errorf("floors names %q, which is not a folder", f)
		}
	}
}
