// Package stagekind names who executes a stage: the one table of stage
// kinds that the planner, the engine and the job's statistics share.
package stagekind

// Kind says who executes a stage. Engine snapshots record kinds by number,
// so a kind keeps its number: add new kinds at the end.
type Kind int

// Stage kinds.
const (
	SDK        Kind = iota // fused transforms run by an SDK harness
	Impulse                // the runner emits one empty element
	GBK                    // the runner groups by key and window, with triggers
	Flatten                // the runner concatenates its inputs
	TestStream             // the runner replays TestStream events
)

var names = [...]string{SDK: "sdk", Impulse: "impulse", GBK: "gbk", Flatten: "flatten", TestStream: "teststream"}

// String is the kind's short name, as the web UI and /metrics show it.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(names) {
		return "unknown"
	}
	return names[k]
}
