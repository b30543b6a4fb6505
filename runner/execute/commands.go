package execute

import (
	"context"
	"fmt"
)

// Commands are the driver's calls that can wait (describing a lost
// worker, restarting it, finalizing a bundle): each runs on a goroutine
// of its own, as bundles do, and reports back on d.results with a
// handler that the driver runs as an event. So the driver never blocks
// on I/O, and only it touches the engine.

// command runs f off the driver goroutine; the handler f returns runs on
// the driver goroutine (onResult). Until then the command is pending: the
// job neither ends nor is declared stuck.
func (d *driver) command(ctx context.Context, f func(context.Context) func() error) {
	d.pending++
	go func() { d.results <- f(ctx) }()
}

// onResult runs a command's handler.
func (d *driver) onResult(h func() error) error {
	d.pending--
	return h()
}

// restart restarts the lost worker of environment env, which failed
// bundle id as what (with detail), off the driver goroutine. Restarts
// run one at a time, in order, as they did on the driver; bundles of env
// started meanwhile wait for the restart (gates) rather than run on the
// lost worker.
func (d *driver) restart(ctx context.Context, id int, env, worker, what, detail string) {
	prev, done := d.restarting, make(chan struct{})
	d.restarting, d.gates[env] = done, done
	d.command(ctx, func(ctx context.Context) func() error {
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
			}
		}
		err := d.r.workers.RestartLost(ctx, env, worker)
		close(done)
		return func() error {
			if d.gates[env] == done {
				delete(d.gates, env)
			}
			if d.restarting == done {
				d.restarting = nil
			}
			if err != nil {
				d.eng.Fail(id)
				return fmt.Errorf("%s; %w%s", what, err, detail)
			}
			return nil
		}
	})
}

// finalize runs a committed bundle's finalization callbacks: its outputs
// are committed, so the SDK may now acknowledge its source. The job does
// not end while it is pending, so callbacks are never lost; nor does a
// drive that ends with an error cut it short: only the job's cancellation
// does, as when it ran on the driver goroutine.
func (d *driver) finalize(ss *sdkStage, inst string) {
	d.command(d.jobCtx, func(ctx context.Context) func() error {
		err := ss.harness.Finalize(ctx, inst)
		return func() error {
			if err != nil {
				d.r.log.Warn("bundle finalization failed", "err", err)
			}
			return nil
		}
	})
}
