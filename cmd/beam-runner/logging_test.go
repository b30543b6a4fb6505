package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSONLogsHaveFieldsPythonParses(t *testing.T) {
	var buf bytes.Buffer
	l, err := newLogger("info", "json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hello", "k", "v")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	src, _ := rec["source"].(map[string]any)
	if rec["level"] != "INFO" || rec["msg"] != "hello" || rec["time"] == nil || src["function"] == nil || src["line"] == nil {
		t.Errorf("record %v lacks fields PrismRunnerLogFilter reads", rec)
	}
}

func TestLoggerFlagValues(t *testing.T) {
	for _, kind := range []string{"dev", "json", "text", "console"} {
		for _, lvl := range []string{"debug", "info", "warn", "error"} {
			if _, err := newLogger(lvl, kind, &bytes.Buffer{}); err != nil {
				t.Errorf("newLogger(%q, %q): %v", lvl, kind, err)
			}
		}
	}
	if _, err := newLogger("loud", "dev", &bytes.Buffer{}); err == nil {
		t.Error("bad level accepted")
	}
	if _, err := newLogger("info", "xml", &bytes.Buffer{}); err == nil {
		t.Error("bad kind accepted")
	}
}
