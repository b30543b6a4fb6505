package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger builds the logger the flags ask for. "json" matches what
// Python's PrismRunner parses from Prism's output (level, msg, time and
// source with function/file/line); "console" is accepted as json, as
// Python does.
func newLogger(level, kind string, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = slog.LevelDebug
	case "info", "":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, fmt.Errorf("--log_level %q: want debug, info, warn or error", level)
	}
	switch strings.ToLower(kind) {
	case "json", "console":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl, AddSource: true})), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
	case "dev", "":
		return slog.New(newDevHandler(w, lvl)), nil
	default:
		return nil, fmt.Errorf("--log_kind %q: want dev, json or text", kind)
	}
}

// newDevHandler is text for people: time, level, message, then attributes,
// with source lines only at debug level where they help.
func newDevHandler(w io.Writer, lvl slog.Level) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{
		Level:     lvl,
		AddSource: lvl <= slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.String(a.Key, a.Value.Time().Format("15:04:05.000"))
			}
			return a
		},
	})
}
