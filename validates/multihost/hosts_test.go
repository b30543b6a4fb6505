//go:build multihost

package multihost

import (
	"os"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/nshost"
)

// The hosts of this test: half a core each, on 198.18.0.0/24.
var hostOpts = nshost.Options{Prefix: "brmh", Net: "198.18.0", QuotaUS: 50000}

// coordAddr is the job server's address on every link.
var coordAddr = hostOpts.CoordAddr()

type host = nshost.Host

// newHosts makes n hosts, each with its worker pool serving (testsupport/nshost).
func newHosts(t *testing.T, py string, n int) []*host {
	o := hostOpts
	o.LogDir = logDir(t)
	return nshost.New(t, py, n, o)
}

// leftovers lists what of the test's hosts still exists.
func leftovers() []string { return nshost.Leftovers(hostOpts.Prefix) }

func logDir(t *testing.T) string {
	if d := os.Getenv("MULTIHOST_LOGDIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
