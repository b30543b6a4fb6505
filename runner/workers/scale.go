package workers

import (
	"context"
	"fmt"
	"slices"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/worker"
)

// Scaling (issue 36, docs/scaling.md "Autoscaling"): Scale moves an
// environment's workers toward a count without waiting and without
// stopping the job. A scale-up adds a starting slot to the environment's
// board and starts its worker on a goroutine; bundles keep going to the
// workers that are up and reach the new one once it connects. A scale-
// down drains a slot: the board gives it no new bundle, and once the
// bundles it runs have ended its worker is stopped. Nothing moves: SDK
// workers hold no state, and a stateful stage's key lane whose slot is
// drained runs on another worker from its next bundle on.

// Scale moves environment env toward n workers and returns how many it
// had; the starts and drains it begins finish on their own goroutines,
// which Stop ends.
func (p *Pool) Scale(env string, n int) (int, error) {
	ws := p.harnesses[env]
	if ws == nil {
		return 0, fmt.Errorf("environment %q has no workers to scale", env)
	}
	if n < 1 {
		return 0, fmt.Errorf("environment %q: cannot scale to %d workers", env, n)
	}
	cur := ws.Workers()
	for k := cur; k < n; k++ {
		if rm := p.remotes[env]; rm != nil {
			rm.grow()
		} else {
			p.growLocal(env, ws)
		}
	}
	for k := n; k < cur; k++ {
		p.drain(env, ws)
	}
	return cur, nil
}

// Scaling is the job's autoscaling, as Start read it.
func (p *Pool) Scaling() jobs.Scaling { return p.scale }

// Bounds are environment env's least and most workers (both its fixed
// count without autoscaling).
func (p *Pool) Bounds(env string) (lo, hi int) {
	b := p.bounds[env]
	return b[0], b[1]
}

// growLocal starts one more worker of a local environment.
func (p *Pool) growLocal(env string, ws *Set) {
	w := ws.addSlot(func(b *placement.Board) int { return 0 })
	p.mu.Lock()
	p.grown[env]++
	id := fmt.Sprintf("%s-s%d", workerID(p.job.ID, p.envIdx[env], 0), p.grown[env])
	p.mu.Unlock()
	p.goScale(func(ctx context.Context) {
		fw, h, err := p.launch(ctx, env, id)
		if err != nil {
			ws.update(func(b *placement.Board) { b.Stopped(w) })
			if ctx.Err() == nil {
				p.log.Warn("scale-up: worker did not start", "env", env, "worker", id, "err", err)
				p.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING,
					fmt.Sprintf("autoscaling: a new worker of environment %q did not start: %v", env, err))
			}
			return
		}
		ew := &envWorker{envID: env, base: id, fw: fw, handle: h, h: harness.New(fw), slot: w}
		ws.mu.Lock()
		ws.hs[w] = ew.h
		ws.mu.Unlock()
		var up bool
		ws.update(func(b *placement.Board) { up = b.Connected(w) })
		if !up { // drained while it started
			p.stopWorker(ctx, id, h)
			ws.update(func(b *placement.Board) { b.Stopped(w) })
			return
		}
		p.mu.Lock()
		p.workers[env] = append(p.workers[env], ew)
		p.mu.Unlock()
		p.log.Info("scale-up: worker takes bundles", "env", env, "worker", id)
	})
}

// drain takes one worker of env out of service: at once if it runs
// nothing, else once its running bundles end. A slot still starting is
// left to its start, which stops the worker when it connects.
func (p *Pool) drain(env string, ws *Set) {
	var w int
	var was placement.State
	ws.update(func(b *placement.Board) {
		if w = b.PickDrain(); w >= 0 {
			was = b.Drain(w)
		}
	})
	switch {
	case w < 0, was == placement.Starting:
		return
	case was == placement.Down:
		ws.update(func(b *placement.Board) { b.Stopped(w) })
		return
	}
	p.goScale(func(ctx context.Context) {
		if !ws.awaitDrained(ctx, w) {
			return // the job ends: Stop stops every worker
		}
		if rm := p.remotes[env]; rm != nil {
			rm.stopSlot(w)
		} else {
			p.stopLocal(ctx, env, w)
		}
		ws.update(func(b *placement.Board) { b.Stopped(w) })
	})
}

// stopLocal stops the local worker of slot w, which no longer restarts.
func (p *Pool) stopLocal(ctx context.Context, env string, w int) {
	p.mu.Lock()
	var id string
	var h worker.Handle
	if i := slices.IndexFunc(p.workers[env], func(e *envWorker) bool { return e.slot == w }); i >= 0 {
		id, h = p.workers[env][i].fw.ID, p.workers[env][i].handle
		p.workers[env] = slices.Delete(p.workers[env], i, i+1)
	}
	p.mu.Unlock()
	if h == nil {
		return
	}
	p.stopWorker(ctx, id, h)
	p.log.Info("scale-down: worker drained and stopped", "env", env, "worker", id)
}

// stopWorker stops a worker process and forgets its handle, so that the
// job's end does not stop it again.
func (p *Pool) stopWorker(ctx context.Context, id string, h worker.Handle) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		p.log.Debug("stopping a drained worker", "worker", id, "err", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handles = slices.DeleteFunc(p.handles, func(x worker.Handle) bool { return x == h })
}

// goScale runs f on a goroutine that Stop cancels and waits for.
func (p *Pool) goScale(f func(ctx context.Context)) {
	p.scaling.Add(1)
	go func() {
		defer p.scaling.Done()
		f(p.scaleCtx)
	}()
}

// addSlot adds a starting slot on the pool pick chooses and returns it.
func (ws *Set) addSlot(pick func(b *placement.Board) int) int {
	w := -1
	ws.update(func(b *placement.Board) {
		if p := pick(b); p >= 0 {
			w = b.AddSlot(p)
			for len(ws.hs) <= w {
				ws.hs = append(ws.hs, nil)
			}
		}
	})
	return w
}

// awaitDrained waits until draining slot w runs no bundle; false if ctx
// ends first.
func (ws *Set) awaitDrained(ctx context.Context, w int) bool {
	for {
		ws.mu.Lock()
		done, changed := ws.board.Drained(w), ws.changed
		ws.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}
