// Package pyrun runs Python Beam clients so that they leave with os._exit
// once they return: pyrun.py says why.
package pyrun

import (
	_ "embed"
	"os"
	"path/filepath"
)

//go:embed pyrun.py
var script []byte

// Write writes pyrun.py into dir and returns its path. Run a client as
// "python PATH SCRIPT ARGS..." or "python PATH -m MODULE ARGS...".
func Write(dir string) (string, error) {
	path := filepath.Join(dir, "pyrun.py")
	return path, os.WriteFile(path, script, 0o644)
}
