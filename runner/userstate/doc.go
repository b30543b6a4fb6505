// Package userstate is the in-memory user state of one job's stateful DoFns,
// served to SDK harnesses over the Fn API state plane.
//
// State is written only when its bundle succeeds: each bundle works in a
// Txn that reads the committed Store plus its own buffered writes, and the
// driver applies those writes with Store.Commit once the bundle succeeds. A
// Txn that is never committed (failed bundle) leaves no trace, so the bundle
// can be retried.
//
// It is not part of the engine (runner/engine), though it was once kept
// there: the engine is a single-threaded state machine the driver alone
// calls, while this Store is guarded by a mutex and read and written by
// the bundles' goroutines (the state plane) as they run. The driver, not
// the engine, commits a bundle's Txn (before engine.Engine.Commit, so the
// state is in place when the bundle's output moves watermarks), drops
// the windows the engine reports expired, and snapshots the Store beside
// the engine's snapshot in a checkpoint. The engine knows only keys and
// windows (engine.StateWindow), never state.
//
// The package does no I/O, starts no goroutines and reads no clock. Iteration that is
// visible to callers (map keys, Scopes) is sorted, so equal inputs give equal
// outputs.
//
// # State kinds
//
//   - BagUserState: Get returns every appended piece in append order (each
//     Append's data holds whole elements, so pieces are element-aligned, as
//     the state plane's paging requires). The Go SDK also builds value and
//     combining state on bags.
//   - MultimapUserState / MultimapKeysUserState: one map per state id. Map
//     keys are compared as encoded bytes and listed sorted by those bytes.
//   - OrderedListUserState: entries sorted by sort key, stable for equal
//     keys (insertion order); Get and Clear take a [start, end) range.
//
// # Ordered list wire formats
//
// An entry is varint(uint64(sortKey)) followed by the value; the store finds
// entry boundaries with the value codec that Begin's lookup returns, and
// serves the entries' bytes back unchanged. The SDKs differ in the value
// part:
//
//   - Go (exec/userstate.go encodeOrderedListEntry): the value encoded with
//     the state's value coder in nested context, so the lookup returns
//     coders.Compile(components, spec.element_coder_id).
//   - Python (bundle_processor.py SynchronousOrderedListRuntimeState): a
//     TupleCoder(VarIntCoder, LengthPrefixCoder(value_coder)), i.e. the value
//     is always length-prefixed, whatever element_coder_id says. The lookup
//     must then return LengthPrefixedValues (or any length-prefix codec).
//
// Both SDKs write the sort key the same way (two's complement as uint64,
// not zig-zag). Deciding which SDK runs a transform is the caller's job.
package userstate
