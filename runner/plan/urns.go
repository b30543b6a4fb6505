// Package plan turns a pipeline proto into stages: it validates what the
// runner supports, expands composites (lifting combiners, expanding
// splittable DoFns), and fuses SDK transforms greedily into stages whose
// inputs and outputs the runner materialises.
package plan

// Transform URNs the planner knows.
const (
	URNImpulse        = "beam:transform:impulse:v1"
	URNParDo          = "beam:transform:pardo:v1"
	URNFlatten        = "beam:transform:flatten:v1"
	URNGBK            = "beam:transform:group_by_key:v1"
	URNWindowInto     = "beam:transform:window_into:v1"
	URNCombinePerKey  = "beam:transform:combine_per_key:v1"
	URNCombineGrouped = "beam:transform:combine_grouped_values:v1"
	URNPreCombine     = "beam:transform:combine_per_key_precombine:v1"
	URNMergeAccum     = "beam:transform:combine_per_key_merge_accumulators:v1"
	URNExtractOutputs = "beam:transform:combine_per_key_extract_outputs:v1"
	URNMapWindows     = "beam:transform:map_windows:v1"
	URNMergeWindows   = "beam:transform:merge_windows:v1"
	URNToString       = "beam:transform:to_string:v1"
	URNReshuffle      = "beam:transform:reshuffle:v1"
	URNPairWithRestr  = "beam:transform:sdf_pair_with_restriction:v1"
	URNSplitAndSize   = "beam:transform:sdf_split_and_size_restrictions:v1"
	URNProcessSized   = "beam:transform:sdf_process_sized_element_and_restrictions:v1"
	URNTruncate       = "beam:transform:sdf_truncate_sized_restrictions:v1"
	URNTestStream     = "beam:transform:test_stream:v1"
	// URNTestStreamGo is the URN the Go SDK gives its TestStream.
	URNTestStreamGo = "beam:transform:teststream:v1"
	URNDataSource   = "beam:runner:source:v1"
	URNDataSink     = "beam:runner:sink:v1"
)

// Window fn URNs.
const (
	URNGlobalWindows  = "beam:window_fn:global_windows:v1"
	URNFixedWindows   = "beam:window_fn:fixed_windows:v1"
	URNSlidingWindows = "beam:window_fn:sliding_windows:v1"
	URNSessions       = "beam:window_fn:session_windows:v1"
)

// Requirement URNs.
const (
	ReqSplittable   = "beam:requirement:pardo:splittable_dofn:v1"
	ReqStateful     = "beam:requirement:pardo:stateful:v1"
	ReqFinalization = "beam:requirement:pardo:finalization:v1"
	ReqStableInput  = "beam:requirement:pardo:stable_input:v1"
	ReqTimeSorted   = "beam:requirement:pardo:time_sorted_input:v1"
	ReqOnWindowExp  = "beam:requirement:pardo:on_window_expiration:v1"
)

// sdkLeaves are leaf transforms the SDK harness executes.
var sdkLeaves = map[string]bool{
	URNParDo: true, URNWindowInto: true, URNCombineGrouped: true,
	URNPreCombine: true, URNMergeAccum: true, URNExtractOutputs: true,
	URNMapWindows: true, URNMergeWindows: true, URNToString: true,
	URNPairWithRestr: true, URNSplitAndSize: true, URNProcessSized: true, URNTruncate: true,
}

// runnerLeaves are leaf transforms the runner executes itself.
var runnerLeaves = map[string]bool{URNImpulse: true, URNFlatten: true, URNGBK: true, URNTestStream: true, URNTestStreamGo: true}

// supportedRequirements lists pipeline requirements the runner honours.
var supportedRequirements = map[string]bool{
	ReqSplittable:   true,
	ReqStateful:     true,
	ReqFinalization: true,
	ReqStableInput:  true, // bundles are materialised before they run, so input is stable
	ReqOnWindowExp:  true,
	ReqTimeSorted:   true,
}
