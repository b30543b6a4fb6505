package jobs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNoLockAcrossSyncedWrite: no function of the packages that keep job
// records and drive jobs holds a mutex while it makes a synced write
// (issue 38): a checkpoint's two fsyncs once held record.mu, so the
// driver's job messages and metrics waited behind them. A lint over the
// source: a synced write is a Commit whose argument is not the literal
// false, a Checkpoint (Job.Checkpoint syncs) or a savepoint.Write (it
// syncs each file and directory), and any function of the
// package that reaches one by calls outside goroutines and function
// literals (which run later, on a writer). A mutex is held from a Lock
// until an Unlock that is a statement of the function's own body (one
// in a branch, or deferred, holds it to the end), and throughout a
// function whose name ends in Locked.
func TestNoLockAcrossSyncedWrite(t *testing.T) {
	for _, dir := range []string{".", "../execute"} {
		fset, files := parseDir(t, dir)
		for _, v := range lockedSyncs(fset, files) {
			t.Errorf("%s: %s", dir, v)
		}
	}
}

// TestLockCheckFinds: the lint above reports a synced write made under a
// lock, directly or through a call, and not one made after the Unlock or
// queued in a function literal.
func TestLockCheckFinds(t *testing.T) {
	const src = `package p
func (r *rec) bad() { r.mu.Lock(); defer r.mu.Unlock(); r.save() }
func (r *rec) badLocked() { r.b.Commit(r.sync) }
func (r *rec) save() { r.b.Commit(true) }
func (r *rec) good() { r.mu.Lock(); r.n++; r.mu.Unlock(); r.save() }
func (r *rec) queued() { r.mu.Lock(); defer r.mu.Unlock(); r.w.enqueue(func() { r.save() }); r.b.Commit(false) }
func (r *rec) branch() { r.mu.Lock(); if r.n > 0 { r.mu.Unlock(); return }; r.save(); r.mu.Unlock() }
func (r *rec) spLocked() { savepoint.Write(r.dir, r.sp) }
func (r *rec) spAfter() { r.mu.Lock(); r.n++; r.mu.Unlock(); savepoint.Write(r.dir, r.sp) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lockedSyncs(fset, []*ast.File{f}), "\n")
	for _, want := range []string{"bad calls save", "badLocked calls Commit", "branch calls save", "spLocked calls Write"} {
		if !strings.Contains(got, want) {
			t.Errorf("lint reported:\n%s\nwant %q", got, want)
		}
	}
	for _, not := range []string{"good calls", "queued calls", "spAfter calls"} {
		if strings.Contains(got, not) {
			t.Errorf("lint reported:\n%s\nwant nothing for %q", got, not)
		}
	}
}

func parseDir(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return fset, files
}

// lockedSyncs lists the calls made under a lock that reach a synced write.
func lockedSyncs(fset *token.FileSet, files []*ast.File) []string {
	calls := map[string][]string{} // by function name (methods by theirs)
	syncs := map[string]bool{}
	var funcs []*ast.FuncDecl
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs = append(funcs, fd)
			eachCall(fd.Body, func(c *ast.CallExpr) {
				name := callName(c)
				calls[fd.Name.Name] = append(calls[fd.Name.Name], name)
				if syncedWrite(c) {
					syncs[fd.Name.Name] = true
				}
			})
		}
	}
	for changed := true; changed; {
		changed = false
		for fn, cs := range calls {
			for _, c := range cs {
				if syncs[c] && !syncs[fn] {
					syncs[fn], changed = true, true
				}
			}
		}
	}
	var out []string
	for _, fd := range funcs {
		out = append(out, heldSyncs(fset, fd, syncs)...)
	}
	sort.Strings(out)
	return out
}

// heldSyncs checks one function's calls made while it holds a lock.
func heldSyncs(fset *token.FileSet, fd *ast.FuncDecl, syncs map[string]bool) []string {
	held := 0
	if strings.HasSuffix(fd.Name.Name, "Locked") {
		held = 1
	}
	var out []string
	for _, st := range fd.Body.List {
		if es, ok := st.(*ast.ExprStmt); ok {
			if c, ok := es.X.(*ast.CallExpr); ok && callName(c) == "Unlock" {
				held--
				continue
			}
		}
		eachCall(st, func(c *ast.CallExpr) {
			name := callName(c)
			switch {
			case name == "Lock":
				held++
			case held > 0 && (syncs[name] || syncedWrite(c)):
				out = append(out, fmt.Sprintf("%s: %s calls %s holding a lock, which reaches a synced write",
					fset.Position(c.Pos()), fd.Name.Name, name))
			}
		})
	}
	return out
}

// eachCall calls f for every call in n, in source order, except those in
// function literals and go statements: they run later, elsewhere.
func eachCall(n ast.Node, f func(*ast.CallExpr)) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.CallExpr:
			f(n)
		}
		return true
	})
}

func callName(c *ast.CallExpr) string {
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}

// syncedWrite reports whether c is a Commit that may sync, a Checkpoint
// or a savepoint.Write.
func syncedWrite(c *ast.CallExpr) bool {
	switch callName(c) {
	case "Checkpoint":
		return true
	case "Write":
		sel, _ := c.Fun.(*ast.SelectorExpr)
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "savepoint"
	case "Commit":
		if len(c.Args) != 1 {
			return false
		}
		id, ok := c.Args[0].(*ast.Ident)
		return !ok || id.Name != "false"
	}
	return false
}
