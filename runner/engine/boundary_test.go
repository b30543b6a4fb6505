package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoundaryDeps keeps the engine pure: nothing it links may speak gRPC
// or the Fn API, so its state stays plain data the driver can snapshot.
func TestBoundaryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/grpc") || strings.Contains(dep, "fnexecution_v1") ||
			strings.HasPrefix(dep, "github.com/beam-runner/beam-runner/worker") {
			t.Errorf("runner/engine/... depends on %s", dep)
		}
	}
}

// forbiddenImports are I/O the engine's own code must leave to the driver.
var forbiddenImports = []string{"net", "os", "syscall"}

// TestBoundaryCode checks the engine's own (non-test) sources: no I/O
// imports, no goroutines, no wall clock.
func TestBoundaryCode(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/*.go")
	files = append(files, more...)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, bad := range forbiddenImports {
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
	if checked < 10 {
		t.Fatalf("checked only %d files: the glob no longer finds the engine's sources", checked)
	}
}
