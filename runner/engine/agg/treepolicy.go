package agg

// The policy of a combiner tree (tree.go), apart from its mechanics so it
// can be read and tested on its own: when a lifted combine's GroupByKey
// sends its accumulators to the SDK to be merged, which of them, and in
// how large pieces.
//
// A pass starts once the fresh bytes (accumulators added since the last
// pass began) reach both PassBytes and the bytes the last pass kept (its
// uncombined accumulators plus the combined ones it put back). Memory then
// stays within about twice max(PassBytes, one accumulator per key and
// window), and since each pass reads at most its fresh bytes plus what the
// last one kept, no more than that again, the SDK combines at most about
// twice the input's accumulators in all, however large the input.
//
// Passes do not wait for the combines of earlier ones: a pass takes its
// groups out of the buffer at once, so what waits for the SDK is partial
// groups compactly encoded (a key's values back to back), not buffered
// values with their bookkeeping, and the buffer stays bounded however
// slowly combines come back (the engine takes in a large chunk whole before
// any combine can finish).

// CombineTree configures the combiner tree of a lifted combine's
// GroupByKey. It applies to the default-trigger fast path only (batch.go),
// which is where lifted combines are planned (see plan.liftable).
type CombineTree struct {
	// PassBytes is the least fresh accumulator bytes (keys, values and
	// bookkeeping, as the spill counts them) that start a pass.
	PassBytes int
	// BundleBytes bounds the encoded input of one combine bundle, so a pass
	// spreads over the SDK workers.
	BundleBytes int
}

// Defaults of a combiner tree: a pass every 8 MiB of fresh accumulators,
// cut into combines of 4 MiB. (Go wordcount over 60 MiB, 50,000 words, on a
// loaded 2-core machine: 16 MiB peaked at 253 MiB of server RSS, 8 MiB at
// 209-293 MiB from run to run, against 1.9 GiB without a tree.)
const (
	DefaultPassBytes   = 8 << 20
	DefaultBundleBytes = 4 << 20
)

// treeFanIn is the least accumulators of one key and window worth a
// combine: a key with one keeps it, copied out of the input it arrived in.
const treeFanIn = 2

// treeLoad is what the policy decides from.
type treeLoad struct {
	fresh int // bytes added by input since the last pass began
	kept  int // bytes the last pass kept and combines put back since
}

type treePolicy struct {
	passBytes, bundleBytes int
}

func newTreePolicy(c CombineTree) treePolicy {
	p := treePolicy{passBytes: c.PassBytes, bundleBytes: c.BundleBytes}
	if p.passBytes <= 0 {
		p.passBytes = DefaultPassBytes
	}
	if p.bundleBytes <= 0 {
		p.bundleBytes = DefaultBundleBytes
	}
	return p
}

// due reports whether a pass starts now.
func (p treePolicy) due(l treeLoad) bool {
	return l.fresh > 0 && l.fresh >= max(p.passBytes, l.kept)
}

// combines reports whether a key's n accumulators in one window go to the
// SDK in this pass.
func (p treePolicy) combines(n int) bool { return n >= treeFanIn }

// full reports whether a combine bundle of size encoded bytes is complete.
func (p treePolicy) full(size int) bool { return size >= p.bundleBytes }
