package jobs

import "sync"

// writer runs a journal's writes one at a time, in the order they were
// queued, on a goroutine that lives while there is work. The record queues
// a write while it holds record.mu, which makes the writes' order the
// log's, and waits for one, if it must, after releasing it: no lock is
// held across a synced commit, so a checkpoint's fsyncs never hold up a
// job message or a metrics update (lockcheck_test.go).
type writer struct {
	mu      sync.Mutex
	queue   []func()
	running bool
}

// enqueue queues f, starting the writing goroutine if none runs. It never
// waits on I/O.
func (w *writer) enqueue(f func()) {
	w.mu.Lock()
	w.queue = append(w.queue, f)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.drain()
	}
}

// drain runs the queued writes until none is left.
func (w *writer) drain() {
	for {
		w.mu.Lock()
		q := w.queue
		w.queue = nil
		if len(q) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for i, f := range q {
			f()
			q[i] = nil // let the event go
		}
	}
}

// wait blocks until saved (a write's channel; nil: nothing to wait for)
// is closed.
func wait(saved <-chan struct{}) {
	if saved != nil {
		<-saved
	}
}
