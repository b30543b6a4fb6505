package autoscale

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoundaryDeps keeps the policy pure, as runner/engine's test does
// for the engine: nothing it links may speak gRPC or the Fn API.
func TestBoundaryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps .: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/grpc") || strings.Contains(dep, "fnexecution_v1") ||
			strings.HasPrefix(dep, "github.com/beam-runner/beam-runner/") && dep != "github.com/beam-runner/beam-runner/runner/autoscale" {
			t.Errorf("runner/autoscale depends on %s", dep)
		}
	}
}

// forbiddenImports are I/O the policy leaves to its caller.
var forbiddenImports = []string{"net", "os", "syscall"}

// TestBoundaryCode checks the package's own (non-test) sources: no I/O
// imports, no goroutines, no clock read (times come from the caller).
func TestBoundaryCode(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
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
			for _, bad := range append(forbiddenImports, "time") {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s starts a goroutine", fset.Position(g.Pos()))
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked only %d files: the glob no longer finds the package's sources", checked)
	}
}
