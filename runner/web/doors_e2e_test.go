package web_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
)

// call sends method path to the web endpoint with the given Host (empty:
// the endpoint's own) and headers, and returns the status and body.
func call(t *testing.T, env *jobtest.Env, method, path, host string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.WebURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func jobState(t *testing.T, env *jobtest.Env, id string) jobpb.JobState_Enum {
	t.Helper()
	st, err := env.Client.GetState(t.Context(), &jobpb.GetJobStateRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	return st.GetState()
}

// TestWebDoors runs a streaming job on a real server: a page of another
// site that posts to cancel or drain it (a modern browser's headers, or
// an old one's Origin alone) gets 403 and the job keeps running; a
// request naming another host (DNS rebinding) gets 403 and none of the
// job's data; the UI's own same-origin cancel still works.
func TestWebDoors(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "doors-streaming", jobtest.Streaming(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	crossSite := []map[string]string{
		{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "same-site"},
	}
	for _, action := range []string{"cancel", "drain"} {
		for _, h := range crossSite {
			if code, body := call(t, env, "POST", "/api/jobs/"+id+"/"+action, "", h); code != http.StatusForbidden {
				t.Errorf("cross-site POST %s %v: %d %q, want 403", action, h, code, body)
			}
		}
	}
	if st := jobState(t, env, id); st != jobpb.JobState_RUNNING {
		t.Fatalf("after cross-site cancel and drain posts the job is %v, want RUNNING", st)
	}

	web, _ := url.Parse(env.WebURL)
	rebound := "evil.example:" + web.Port()
	for _, path := range []string{"/api/jobs", "/api/jobs/" + id, "/api/jobs/" + id + "/events", "/metrics", "/"} {
		if code, body := call(t, env, "GET", path, rebound, nil); code != http.StatusForbidden || strings.Contains(body, id) || strings.Contains(body, "beam_runner") {
			t.Errorf("GET %s as %s: %d %q, want 403 and no data", path, rebound, code, body)
		}
	}
	if code, body := call(t, env, "POST", "/api/jobs/"+id+"/cancel", rebound, nil); code != http.StatusForbidden {
		t.Errorf("POST cancel as %s: %d %q, want 403", rebound, code, body)
	}
	if code, body := call(t, env, "GET", "/api/jobs", "", nil); code != http.StatusOK || !strings.Contains(body, id) {
		t.Errorf("GET /api/jobs as the endpoint itself: %d %q, want the job listed", code, body)
	}

	sameOrigin := map[string]string{"Origin": env.WebURL, "Sec-Fetch-Site": "same-origin"}
	if code, body := call(t, env, "POST", "/api/jobs/"+id+"/cancel", "", sameOrigin); code != http.StatusOK {
		t.Fatalf("same-origin cancel: %d %q, want 200", code, body)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_CANCELLED, time.Minute); err != nil {
		t.Fatal(err)
	}
}
