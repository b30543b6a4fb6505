package coders

// Standard coder URNs (beam_runner_api.proto StandardCoders).
const (
	URNBytes              = "beam:coder:bytes:v1"
	URNStringUTF8         = "beam:coder:string_utf8:v1"
	URNVarint             = "beam:coder:varint:v1"
	URNBool               = "beam:coder:bool:v1"
	URNDouble             = "beam:coder:double:v1"
	URNKV                 = "beam:coder:kv:v1"
	URNIterable           = "beam:coder:iterable:v1"
	URNLengthPrefix       = "beam:coder:length_prefix:v1"
	URNGlobalWindow       = "beam:coder:global_window:v1"
	URNIntervalWindow     = "beam:coder:interval_window:v1"
	URNWindowedValue      = "beam:coder:windowed_value:v1"
	URNParamWindowedValue = "beam:coder:param_windowed_value:v1"
	URNTimer              = "beam:coder:timer:v1"
	URNNullable           = "beam:coder:nullable:v1"
	URNShardedKey         = "beam:coder:sharded_key:v1"
	URNCustomWindow       = "beam:coder:custom_window:v1"
)

// components is how many sub-coders each known URN takes; it doubles as the
// set of URNs the runner can parse itself. Row and state_backed_iterable
// are deliberately absent: their encodings depend on a
// schema or on state the runner does not model, so they get length-prefixed.
var components = map[string]int{
	URNBytes:              0,
	URNStringUTF8:         0,
	URNVarint:             0,
	URNBool:               0,
	URNDouble:             0,
	URNGlobalWindow:       0,
	URNIntervalWindow:     0,
	URNKV:                 2,
	URNIterable:           1,
	URNLengthPrefix:       1,
	URNWindowedValue:      2,
	URNParamWindowedValue: 2,
	URNTimer:              2,
	URNNullable:           1,
	URNShardedKey:         1,
	URNCustomWindow:       1,
}

// Known reports whether the runner can parse values of this coder URN itself.
func Known(urn string) bool {
	_, ok := components[urn]
	return ok
}
