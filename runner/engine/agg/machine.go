package agg

// nstate is one trigger node's state in one window.
type nstate struct {
	count    int64 // kCount: elements seen; kEach: index of the current subtrigger
	at       int64 // kProcTime, kSyncTime: processing time to fire at, if armed
	armed    bool
	finished bool
	late     bool // kEndOfWindow: the end of the window was reached and fired
}

// env is what a trigger may look at: the current times and the window.
type env struct {
	wm      int64 // input watermark
	now     int64 // processing time
	arrival int64 // processing time the current element arrived at
	maxTS   int64 // the window's max timestamp
}

// endReached says the input watermark has passed the end of the window.
func (e env) endReached() bool { return e.wm > e.maxTS }

// The state machine below follows Java's TriggerStateMachines: a finished
// subtrigger takes no more elements and is not asked whether to fire, and
// Repeat resets its subtrigger when it finishes.

func onElement(n *node, s []nstate, e env) {
	st := &s[n.id]
	if st.finished {
		return
	}
	switch n.kind {
	case kCount:
		st.count++
	case kProcTime, kSyncTime:
		if !st.armed {
			st.armed, st.at = true, n.armTime(e.arrival)
		}
	case kEndOfWindow:
		if sub := n.phase(st); sub != nil {
			onElement(sub, s, e)
		}
	case kEach:
		onElement(n.subs[st.count], s, e)
	case kRepeat, kAll, kAny:
		for _, sub := range n.subs {
			onElement(sub, s, e)
		}
	}
}

// armTime is when a processing-time trigger fires for an element that
// arrived at arrival. Synchronized processing time is the runner's own
// processing time; it fires once that has moved past the arrival (Java's
// shouldFire is strictly after), so a single-clock runner does not fire it
// in the same instant the element arrives.
func (n *node) armTime(arrival int64) int64 {
	if n.kind == kSyncTime {
		return arrival + 1
	}
	return n.targetTime(arrival)
}

// phase is the subtrigger of an AfterEndOfWindow that sees elements now.
func (n *node) phase(st *nstate) *node {
	if st.late {
		return n.late
	}
	return n.early
}

func shouldFire(n *node, s []nstate, e env) bool {
	st := &s[n.id]
	if st.finished {
		return false
	}
	switch n.kind {
	case kAlways:
		return true
	case kCount:
		return st.count >= n.count
	case kProcTime, kSyncTime:
		return st.armed && e.now >= st.at
	case kEndOfWindow:
		return eowShouldFire(n, s, e)
	case kRepeat:
		return shouldFire(n.subs[0], s, e)
	case kAll:
		return allShouldFire(n, s, e)
	case kAny:
		for _, sub := range n.subs {
			if shouldFire(sub, s, e) {
				return true
			}
		}
	case kEach:
		return shouldFire(n.subs[st.count], s, e)
	}
	return false
}

func eowShouldFire(n *node, s []nstate, e env) bool {
	st := &s[n.id]
	if st.late {
		return n.late != nil && shouldFire(n.late, s, e)
	}
	return e.endReached() || (n.early != nil && shouldFire(n.early, s, e))
}

// allShouldFire: every subtrigger that has not finished yet is ready.
func allShouldFire(n *node, s []nstate, e env) bool {
	for _, sub := range n.subs {
		if !s[sub.id].finished && !shouldFire(sub, s, e) {
			return false
		}
	}
	return true
}

// onFire records that n fired; it marks n finished when it is done.
func onFire(n *node, s []nstate, e env) {
	st := &s[n.id]
	switch n.kind {
	case kCount, kProcTime, kSyncTime:
		st.finished, st.armed = true, false
	case kEndOfWindow:
		eowOnFire(n, s, e)
	case kRepeat:
		sub := n.subs[0]
		onFire(sub, s, e)
		if s[sub.id].finished {
			reset(sub, s)
		}
	case kAll, kAny:
		parallelOnFire(n, s, e)
	case kEach:
		sub := n.subs[st.count]
		onFire(sub, s, e)
		if s[sub.id].finished {
			st.count++
			st.finished = int(st.count) == len(n.subs)
		}
	}
}

func eowOnFire(n *node, s []nstate, e env) {
	st := &s[n.id]
	switch {
	case st.late:
		onFire(n.late, s, e)
	case e.endReached():
		// The on-time firing: switch to late firings. The early trigger's
		// state can never matter again; clearing it drops its timers.
		st.late = true
		st.finished = n.late == nil
		if n.early != nil {
			reset(n.early, s)
		}
	case n.early != nil:
		onFire(n.early, s, e)
	}
}

// parallelOnFire fires every ready subtrigger. AfterAll finishes when all
// its subtriggers have, AfterAny (and OrFinally) when any has.
func parallelOnFire(n *node, s []nstate, e env) {
	all, any := true, false
	for _, sub := range n.subs {
		if shouldFire(sub, s, e) {
			onFire(sub, s, e)
		}
		fin := s[sub.id].finished
		all = all && fin
		any = any || fin
	}
	if n.kind == kAll {
		s[n.id].finished = all
	} else {
		s[n.id].finished = any
	}
}

// reset clears the state of n and its subtree.
func reset(n *node, s []nstate) {
	s[n.id] = nstate{}
	for _, sub := range n.subs {
		reset(sub, s)
	}
	if n.early != nil {
		reset(n.early, s)
	}
	if n.late != nil {
		reset(n.late, s)
	}
}

// wakeup returns the earliest processing time at which an armed
// processing-time trigger in s could fire.
func wakeup(s []nstate) (int64, bool) {
	var at int64
	ok := false
	for i := range s {
		if s[i].armed && !s[i].finished && (!ok || s[i].at < at) {
			at, ok = s[i].at, true
		}
	}
	return at, ok
}

// mergeStates combines the trigger states of windows that merge into one
// session. Counts add up and timers keep the earliest time, as Java's
// combining state does. A subtrigger stays finished only if it finished in
// every merged window, so merging can re-open it (Java's AfterEach makes
// the same choice); AfterEach resumes at the smallest index.
func mergeStates(dst []nstate, srcs [][]nstate) {
	for i := range dst {
		m := nstate{finished: true, late: true}
		for _, s := range srcs {
			mergeOne(&m, s[i])
		}
		dst[i] = m
	}
}

func mergeOne(m *nstate, s nstate) {
	m.count += s.count
	if s.armed && (!m.armed || s.at < m.at) {
		m.armed, m.at = true, s.at
	}
	m.finished = m.finished && s.finished
	m.late = m.late && s.late
}

// fixMerged restores invariants after a merge: AfterEach
// indices are the minimum rather than the sum, and a session whose end moved
// past the watermark is back before its end of window.
func fixMerged(n *node, s []nstate, srcs [][]nstate, e env) {
	st := &s[n.id]
	switch n.kind {
	case kEach:
		st.count = int64(len(n.subs))
		for _, src := range srcs {
			st.count = min(st.count, src[n.id].count)
		}
		st.finished = int(st.count) == len(n.subs)
	case kEndOfWindow:
		if st.late && !e.endReached() {
			st.late, st.finished = false, false
		}
	}
	for _, sub := range n.subs {
		fixMerged(sub, s, srcs, e)
	}
	if n.early != nil {
		fixMerged(n.early, s, srcs, e)
	}
	if n.late != nil {
		fixMerged(n.late, s, srcs, e)
	}
}
