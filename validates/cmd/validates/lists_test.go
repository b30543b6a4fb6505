package main

import "testing"

// Every checked-in expected list parses with the reader the harness uses
// for it, and lists something.
func TestCheckedInListsRead(t *testing.T) {
	for path, read := range map[string]func(string) ([]string, error){
		"../../expected_go.txt":               readList,
		"../../expected_java.txt":             readJavaList,
		"../../expected_java_needsrunner.txt": readJavaList,
		"../../expected_windowing.txt":        readPythonClassList,
		"../../expected_python.txt":           readPrismList,
	} {
		names, err := read(path)
		if err != nil || len(names) == 0 {
			t.Errorf("%s: %d names, %v", path, len(names), err)
		}
	}
}
