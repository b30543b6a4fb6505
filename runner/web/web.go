// Package web serves operators' views of the job server on one HTTP port:
// the web UI (embedded static assets and a JSON API), Prometheus metrics at
// /metrics, and optionally /debug/pprof. It reads jobs through the same
// jobs.Service the Job API uses, and Cancel and Drain call its Job API
// methods.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

//go:embed static
var static embed.FS

// Options configure the handler.
type Options struct {
	Pprof  bool // serve /debug/pprof/
	Logger *slog.Logger
	// Listen is the address the handler is served on, e.g.
	// "localhost:8074": its host is served besides localhost, 127.0.0.1
	// and ::1 (doors.go).
	Listen string
	// AllowedHosts are more host names to serve, e.g. a proxy's.
	AllowedHosts []string
}

// Handler returns the web endpoint's handler for svc.
func Handler(svc *jobs.Service, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &handler{svc: svc, log: opts.Logger}
	mux := http.NewServeMux()
	assets, _ := fs.Sub(static, "static") // cannot fail: the directory is embedded
	mux.Handle("GET /", http.FileServerFS(assets))
	mux.HandleFunc("GET /api/jobs", h.jobs)
	mux.HandleFunc("GET /api/jobs/{id}", h.job)
	mux.HandleFunc("GET /api/jobs/{id}/events", h.events)
	mux.HandleFunc("POST /api/jobs/{id}/cancel", h.cancel)
	mux.HandleFunc("POST /api/jobs/{id}/drain", h.drain)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newCollector(svc))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)}))
	if opts.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return guard(mux, allowedHosts(opts.Listen, opts.AllowedHosts), opts.Logger)
}

type handler struct {
	svc *jobs.Service
	log *slog.Logger
}

// jobs lists the jobs, with the store's size on disk when there is one.
func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"jobs": h.svc.Summaries(), "now": time.Now()}
	if u, ok, err := h.svc.StoreUsage(); ok && err == nil {
		out["store"] = u
	} else if err != nil {
		h.log.Debug("web: measuring the store", "error", err)
	}
	writeJSON(w, out)
}

// jobView is a job's page data: the detail plus decoded user metrics.
type jobView struct {
	jobs.Detail
	UserMetrics []metrics.Reading `json:"user_metrics"`
	Now         time.Time         `json:"now"`
}

func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	d, err := h.svc.Detail(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	v := jobView{Detail: d, UserMetrics: []metrics.Reading{}, Now: time.Now()}
	for _, mi := range d.Metrics {
		if rd, err := metrics.Read(mi); err == nil && rd.Labels["NAME"] != "" {
			v.UserMetrics = append(v.UserMetrics, rd)
		}
	}
	writeJSON(w, v)
}

func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	evs, err := h.svc.Events(r.PathValue("id"), from)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"events": evs})
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	resp, err := h.svc.Cancel(r.Context(), &jobpb.CancelJobRequest{JobId: id})
	h.log.Info("web: cancel requested", "job_id", id, "remote", r.RemoteAddr, "error", err)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, map[string]string{"state": resp.GetState().String()})
}

func (h *handler) drain(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	resp, err := h.svc.Drain(r.Context(), &jobpb.DrainJobRequest{JobId: id})
	h.log.Info("web: drain requested", "job_id", id, "remote", r.RemoteAddr, "error", err)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, map[string]string{"state": resp.GetState().String()})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil && !errors.Is(err, context.Canceled) {
		slog.Debug("web: writing response", "error", err)
	}
}

// writeError maps the Job API's gRPC status codes to HTTP ones.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.InvalidArgument:
		code = http.StatusBadRequest
	case codes.Unimplemented:
		code = http.StatusNotImplemented
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": status.Convert(err).Message()})
}
