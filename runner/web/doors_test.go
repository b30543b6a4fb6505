package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/jobs"
)

func TestHostName(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:8074": "localhost", "LocalHost": "localhost", "localhost.:8074": "localhost",
		"[::1]:8074": "::1", "[::1]": "::1", "127.0.0.1:80": "127.0.0.1",
		"evil.example:8074": "evil.example", "": "",
	} {
		if got := hostName(in); got != want {
			t.Errorf("hostName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestForeignHostGetsNoData: the names of the machine, the host the UI
// listens on and the extra names are served; a request naming any other
// host (a page rebinding its name to 127.0.0.1) gets 403 and no data,
// on every path.
func TestForeignHostGetsNoData(t *testing.T) {
	svc := jobs.NewService(jobs.Options{})
	defer svc.Close(t.Context())
	h := Handler(svc, Options{Listen: "10.1.2.3:8074", AllowedHosts: []string{"runner.internal", "Proxy.Example:443"}})
	for host, served := range map[string]bool{
		"localhost:8074": true, "127.0.0.1:8074": true, "[::1]:8074": true, "localhost": true,
		"10.1.2.3:8074": true, "runner.internal": true, "proxy.example": true,
		"evil.example:8074": false, "localhost.evil.example:8074": false, "127.0.0.1.nip.io:8074": false,
		"10.1.2.4:8074": false, "": false,
	} {
		for _, path := range []string{"/api/jobs", "/metrics", "/"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", path, nil)
			req.Host = host
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			switch {
			case served && rec.Code != 200:
				t.Errorf("GET %s for host %q: %d %q, want it served", path, host, rec.Code, clip(body))
			case !served && (rec.Code != 403 || strings.Contains(body, "jobs\"") || strings.Contains(body, "beam_runner") || strings.Contains(body, "<title>")):
				t.Errorf("GET %s for host %q: %d %q, want 403 and no data", path, host, rec.Code, clip(body))
			}
		}
	}
}
