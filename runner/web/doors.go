package web

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
)

// localHosts are the names a browser on the server's machine uses for it.
var localHosts = []string{"localhost", "127.0.0.1", "::1"}

// guard serves only what the user's own browser (or a command-line client)
// asks for. The UI listens on the loopback interface, but any page open in
// the user's browser can reach it:
//   - a page of another site whose name it rebinds to 127.0.0.1 sends that
//     name as the Host: a Host not among hosts gets 403 and no data;
//   - a page of another site can post a form to localhost, but the browser
//     says where it comes from (Sec-Fetch-Site, Origin): a state-changing
//     request from another origin gets 403 (net/http.CrossOriginProtection).
func guard(h http.Handler, hosts map[string]bool, log *slog.Logger) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[hostName(r.Host)] {
			log.Warn("web: request for another host refused", "host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
			refuse(w, fmt.Sprintf("host %q is not served here; start the server with --web_allowed_hosts=%s to serve it", r.Host, hostName(r.Host)))
			return
		}
		if err := cop.Check(r); err != nil {
			log.Warn("web: cross-origin request refused", "method", r.Method, "path", r.URL.Path,
				"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
			refuse(w, "cross-origin request refused: "+err.Error())
			return
		}
		h.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintln(w, msg)
}

// allowedHosts is the set of host names served: the local ones, the host
// the UI listens on, and extra (each a name, or host:port).
func allowedHosts(listen string, extra []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range append(append(append([]string(nil), localHosts...), listen), extra...) {
		if n := hostName(h); n != "" {
			out[n] = true
		}
	}
	return out
}

// hostName is a Host header's (or listen address's) host, without its
// port, brackets, trailing dot or case: "[::1]:8074" is "::1".
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}
