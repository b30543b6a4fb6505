package agg

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// kind is a compiled trigger's type. Default and OrFinally compile to the
// kinds they are equivalent to, so the state machine has fewer cases.
type kind uint8

const (
	kNever kind = iota
	kAlways
	kCount       // ElementCount
	kProcTime    // AfterProcessingTime
	kSyncTime    // AfterSynchronizedProcessingTime
	kEndOfWindow // AfterEndOfWindow, with optional early and late subtriggers
	kRepeat
	kAll  // AfterAll
	kAny  // AfterAny, and OrFinally(main, finally) as AfterAny(main, finally)
	kEach // AfterEach
)

// node is one compiled trigger. Its per-window state lives in a []nstate
// indexed by id, so a window's whole trigger state is one flat slice.
type node struct {
	kind  kind
	id    int
	subs  []*node // Repeat, All, Any, Each
	count int64   // kCount
	// early and late are kEndOfWindow's subtriggers; either may be nil.
	early, late *node
	transforms  []*pipepb.TimestampTransform // kProcTime
}

// tree is a compiled trigger and the number of nodes in it.
type tree struct {
	root *node
	size int
}

// compileTrigger turns a trigger proto into a tree. A nil trigger is the
// default trigger. Unknown or malformed triggers are errors that name the
// trigger, so Prepare can reject the pipeline with a useful message.
func compileTrigger(t *pipepb.Trigger) (*tree, error) {
	tr := &tree{}
	if t == nil {
		t = &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}
	}
	root, err := tr.compile(t)
	if err != nil {
		return nil, err
	}
	tr.root = root
	return tr, nil
}

func (tr *tree) newNode(k kind) *node {
	n := &node{kind: k, id: tr.size}
	tr.size++
	return n
}

func (tr *tree) compile(t *pipepb.Trigger) (*node, error) {
	switch x := t.GetTrigger().(type) {
	case *pipepb.Trigger_Default_:
		// Default is Repeatedly(AfterEndOfWindow): an on-time pane, then one
		// pane per late element (Java's DefaultTriggerStateMachine).
		rep := tr.newNode(kRepeat)
		rep.subs = []*node{tr.newNode(kEndOfWindow)}
		return rep, nil
	case *pipepb.Trigger_Never_:
		return tr.newNode(kNever), nil
	case *pipepb.Trigger_Always_:
		return tr.newNode(kAlways), nil
	case *pipepb.Trigger_ElementCount_:
		return tr.compileCount(x.ElementCount)
	case *pipepb.Trigger_AfterProcessingTime_:
		return tr.compileProcTime(x.AfterProcessingTime)
	case *pipepb.Trigger_AfterSynchronizedProcessingTime_:
		return tr.newNode(kSyncTime), nil
	case *pipepb.Trigger_AfterEndOfWindow_:
		return tr.compileEndOfWindow(x.AfterEndOfWindow)
	case *pipepb.Trigger_Repeat_:
		return tr.compileParent(kRepeat, "repeat", []*pipepb.Trigger{x.Repeat.GetSubtrigger()})
	case *pipepb.Trigger_AfterAll_:
		return tr.compileParent(kAll, "after_all", x.AfterAll.GetSubtriggers())
	case *pipepb.Trigger_AfterAny_:
		return tr.compileParent(kAny, "after_any", x.AfterAny.GetSubtriggers())
	case *pipepb.Trigger_AfterEach_:
		return tr.compileParent(kEach, "after_each", x.AfterEach.GetSubtriggers())
	case *pipepb.Trigger_OrFinally_:
		// Fires when either fires and finishes when either finishes, which
		// is AfterAny's behaviour (Python compiles it the same way).
		return tr.compileParent(kAny, "or_finally", []*pipepb.Trigger{x.OrFinally.GetMain(), x.OrFinally.GetFinally()})
	case nil:
		return nil, fmt.Errorf("agg: trigger has no type set")
	default:
		return nil, fmt.Errorf("agg: unsupported trigger %T", x)
	}
}

func (tr *tree) compileCount(c *pipepb.Trigger_ElementCount) (*node, error) {
	if c.GetElementCount() < 1 {
		return nil, fmt.Errorf("agg: element_count trigger needs a positive count, got %d", c.GetElementCount())
	}
	n := tr.newNode(kCount)
	n.count = int64(c.GetElementCount())
	return n, nil
}

func (tr *tree) compileProcTime(p *pipepb.Trigger_AfterProcessingTime) (*node, error) {
	for _, t := range p.GetTimestampTransforms() {
		switch x := t.GetTimestampTransform().(type) {
		case *pipepb.TimestampTransform_Delay_:
			if x.Delay.GetDelayMillis() < 0 {
				return nil, fmt.Errorf("agg: after_processing_time delay %d is negative", x.Delay.GetDelayMillis())
			}
		case *pipepb.TimestampTransform_AlignTo_:
			if x.AlignTo.GetPeriod() <= 0 {
				return nil, fmt.Errorf("agg: after_processing_time align_to period %d is not positive", x.AlignTo.GetPeriod())
			}
		default:
			return nil, fmt.Errorf("agg: unsupported timestamp transform %T", x)
		}
	}
	n := tr.newNode(kProcTime)
	n.transforms = p.GetTimestampTransforms()
	return n, nil
}

func (tr *tree) compileEndOfWindow(e *pipepb.Trigger_AfterEndOfWindow) (*node, error) {
	n := tr.newNode(kEndOfWindow)
	var err error
	if e.GetEarlyFirings() != nil {
		if n.early, err = tr.compileRepeated(e.GetEarlyFirings()); err != nil {
			return nil, err
		}
	}
	if e.GetLateFirings() != nil {
		if n.late, err = tr.compileRepeated(e.GetLateFirings()); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// compileRepeated compiles early and late firings, which the proto defines
// as implicitly repeated.
func (tr *tree) compileRepeated(t *pipepb.Trigger) (*node, error) {
	if _, ok := t.GetTrigger().(*pipepb.Trigger_Repeat_); ok {
		return tr.compile(t)
	}
	rep := tr.newNode(kRepeat)
	sub, err := tr.compile(t)
	if err != nil {
		return nil, err
	}
	rep.subs = []*node{sub}
	return rep, nil
}

func (tr *tree) compileParent(k kind, name string, subs []*pipepb.Trigger) (*node, error) {
	if len(subs) == 0 {
		return nil, fmt.Errorf("agg: %s trigger has no subtriggers", name)
	}
	n := tr.newNode(k)
	for i, s := range subs {
		if s == nil {
			return nil, fmt.Errorf("agg: %s trigger: subtrigger %d is missing", name, i)
		}
		c, err := tr.compile(s)
		if err != nil {
			return nil, err
		}
		n.subs = append(n.subs, c)
	}
	return n, nil
}

// targetTime applies the processing-time transforms to an arrival time.
func (n *node) targetTime(arrival int64) int64 {
	t := arrival
	for _, tt := range n.transforms {
		switch x := tt.GetTimestampTransform().(type) {
		case *pipepb.TimestampTransform_Delay_:
			t += x.Delay.GetDelayMillis()
		case *pipepb.TimestampTransform_AlignTo_:
			t = alignUp(t, x.AlignTo.GetPeriod(), x.AlignTo.GetOffset())
		}
	}
	return t
}

// alignUp returns the smallest offset+k*period at or after t (Java's
// AlignFn and the Go SDK's AlignToTransform doc agree an aligned time stays).
func alignUp(t, period, offset int64) int64 {
	r := (t - offset) % period
	if r < 0 {
		r += period
	}
	if r == 0 {
		return t
	}
	return t + period - r
}
