package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/jobs"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, nil)
	req.Host = "localhost:8074"
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerRoutes(t *testing.T) {
	svc := jobs.NewService(jobs.Options{})
	defer svc.Close(t.Context())
	plain := Handler(svc, Options{})
	profiled := Handler(svc, Options{Pprof: true})

	for _, c := range []struct {
		h       http.Handler
		method  string
		path    string
		code    int
		bodyHas string
	}{
		{plain, "GET", "/", 200, "<title>beam-runner</title>"},
		{plain, "GET", "/app.js", 200, "drawGraph"},
		{plain, "GET", "/api/jobs", 200, `"jobs":[]`},
		{plain, "GET", "/api/jobs/nope", 404, `no job with id \"nope\"`},
		{plain, "POST", "/api/jobs/nope/cancel", 404, "nope"},
		{plain, "POST", "/api/jobs/nope/drain", 404, "nope"},
		{plain, "GET", "/api/jobs/nope/cancel", 404, ""}, // only POST acts
		{plain, "GET", "/metrics", 200, "beam_runner_jobs{state=\"RUNNING\"} 0"},
		{plain, "GET", "/debug/pprof/", 404, ""},
		{profiled, "GET", "/debug/pprof/", 200, "goroutine"},
	} {
		rec := get(t, c.h, c.method, c.path)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.bodyHas) {
			t.Errorf("%s %s: %d %q; want %d containing %q", c.method, c.path, rec.Code, clip(rec.Body.String()), c.code, c.bodyHas)
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
