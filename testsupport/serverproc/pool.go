package serverproc

import (
	"context"
	"fmt"
)

// StartPythonWorkerPool starts Beam Python's worker pool service
// (worker_pool_main: each StartWorker request starts an SDK harness) on a
// free port, in its own process group, so Stop ends the workers it started
// too. Its endpoint is the returned Proc's Addr.
func StartPythonWorkerPool(python, logPath string) (*Proc, error) {
	p, err := Start(context.Background(), Spec{
		Bin: python, Args: []string{"-m", "apache_beam.runners.worker.worker_pool_main"}, PortFlag: "--service_port",
		LogPath: logPath, Ready: Listening,
	})
	if err != nil {
		return nil, fmt.Errorf("worker pool: %w (log %s)", err, logPath)
	}
	return p, nil
}
