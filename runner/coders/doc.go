// Package coders lets the runner work on Beam-encoded elements without
// decoding them into Go values.
//
// The runner keeps elements as encoded bytes end to end. It only needs to
// find element boundaries (Codec.Len), read windowed-value headers
// (WindowedValueCodec.Parse), split KVs into encoded key and value bytes
// (Codec.SplitKV) and build outputs such as GBK results (Append* functions).
// Every parser returns slices into its input and never allocates, so these
// functions are safe to use per element on hot paths.
//
// Coders the runner does not understand are wrapped in
// beam:coder:length_prefix:v1 (LPUnknown) before descriptors are sent to SDK
// harnesses, so every element boundary stays findable.
package coders
