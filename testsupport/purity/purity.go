// Package purity checks that a package stays pure: code that does no I/O,
// starts no goroutine and never reads the clock, so its state is plain data
// a driver can feed, snapshot and test without a harness (runner/engine,
// runner/autoscale).
package purity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Deps fails t for each package that pattern's packages link (go list
// -deps) and bad refuses.
func Deps(t *testing.T, pattern string, bad func(dep string) bool) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if bad(dep) {
			t.Errorf("%s depends on %s", pattern, dep)
		}
	}
}

// SpeaksFnAPI is a dependency no pure package may link: gRPC or the Fn API.
func SpeaksFnAPI(dep string) bool {
	return strings.HasPrefix(dep, "google.golang.org/grpc") || strings.Contains(dep, "fnexecution_v1")
}

// Code checks the non-test Go files that globs match: none imports one of
// forbidden (or a package below one), starts a goroutine, or reads the
// clock (time.Now, Since, Until). Fewer than minFiles files checked fails
// too: the globs no longer find the package's sources.
func Code(t *testing.T, globs []string, forbidden []string, minFiles int) {
	t.Helper()
	fset := token.NewFileSet()
	checked := 0
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			checkFile(t, fset, f, forbidden)
		}
	}
	if checked < minFiles {
		t.Fatalf("checked only %d files of %v: the globs no longer find the package's sources", checked, globs)
	}
}

func checkFile(t *testing.T, fset *token.FileSet, f *ast.File, forbidden []string) {
	t.Helper()
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		for _, bad := range forbidden {
			if path == bad || strings.HasPrefix(path, bad+"/") {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			t.Errorf("%s starts a goroutine", fset.Position(n.Pos()))
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until") {
				t.Errorf("%s reads the clock (time.%s)", fset.Position(n.Pos()), n.Sel.Name)
			}
		}
		return true
	})
}
