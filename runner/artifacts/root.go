package artifacts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/beam-runner/beam-runner/internal/ownerdir"
)

// rootPattern names the artifact roots servers create in the temp dir.
const rootPattern = "beam-runner-artifacts-"

// ownerFile holds the pid of the server that owns a root.
const ownerFile = ".owner-pid"

// NewRoot creates a fresh, private (0700) artifact root in the system's
// temp directory for this server, after removing the roots of servers
// that died without cleaning up (killed, say). Only roots this user owns,
// whose owner process is gone, are removed.
func NewRoot() (string, error) {
	removeDeadRoots(os.TempDir())
	dir, err := os.MkdirTemp("", rootPattern+"*") // MkdirTemp makes it 0700
	if err != nil {
		return "", fmt.Errorf("creating the artifact root: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("creating the artifact root: %w", err)
	}
	return dir, nil
}

// removeDeadRoots removes the roots in tmp of this user's dead servers.
func removeDeadRoots(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), rootPattern) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if ownerdir.OwnedByMe(dir) && ownerDead(dir) {
			os.RemoveAll(dir)
		}
	}
}

// ownerDead: the owner file names a pid that no longer runs. A root
// without one is left alone: it may be being created right now.
func ownerDead(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return ownerdir.ProcessGone(pid)
}
