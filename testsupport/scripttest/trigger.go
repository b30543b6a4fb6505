package scripttest

import (
	"fmt"
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// ParseTrigger reads a trigger written with the names of Beam's Python
// SDK, without spaces: Default, Never, Always, AfterCount(n),
// AfterProcessingTime(TT,...), AfterSynchronizedProcessingTime,
// AfterWatermark(early=T,late=T), Repeatedly(T), AfterAny(T,...),
// AfterAll(T,...), AfterEach(T,...) and OrFinally(T,T). AfterProcessingTime's
// timestamp transforms apply in order: a number is a delay in
// milliseconds, AlignTo(PERIOD,OFFSET) rounds up to a period's boundary.
func ParseTrigger(s string) (*pipepb.Trigger, error) {
	p := &trigParser{s: s}
	t, err := p.trigger()
	if err == nil && p.i < len(s) {
		err = fmt.Errorf("unexpected %q", s[p.i:])
	}
	if err != nil {
		return nil, fmt.Errorf("trigger %q: %w", s, err)
	}
	return t, nil
}

type trigParser struct {
	s string
	i int
}

// trigArg is one argument in parentheses: a trigger, a number or a
// timestamp transform, maybe named (early=...).
type trigArg struct {
	name string
	trig *pipepb.Trigger
	num  int64
	tt   *pipepb.TimestampTransform
}

func (p *trigParser) trigger() (*pipepb.Trigger, error) {
	name := p.word()
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	build, ok := triggerBuilders[name]
	if !ok {
		return nil, fmt.Errorf("unknown trigger %q", name)
	}
	return build(args)
}

func (p *trigParser) word() string {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("(),=", p.s[p.i]) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *trigParser) args() ([]trigArg, error) {
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, nil
	}
	var out []trigArg
	for p.i < len(p.s) && p.s[p.i] != ')' {
		p.i++ // '(' or ','
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		if p.i >= len(p.s) || (p.s[p.i] != ',' && p.s[p.i] != ')') {
			return nil, fmt.Errorf("want ',' or ')' at offset %d", p.i)
		}
	}
	p.i++ // ')'
	return out, nil
}

func (p *trigParser) arg() (trigArg, error) {
	var a trigArg
	start := p.i
	if w := p.word(); p.i < len(p.s) && p.s[p.i] == '=' {
		a.name = w
		p.i++
	} else {
		p.i = start
	}
	if n, err := strconv.ParseInt(p.peekWord(), 10, 64); err == nil {
		p.word()
		a.num = n
		return a, nil
	}
	if p.peekWord() == "AlignTo" {
		tt, err := p.alignTo()
		a.tt = tt
		return a, err
	}
	t, err := p.trigger()
	a.trig = t
	return a, err
}

// alignTo reads AlignTo(PERIOD,OFFSET).
func (p *trigParser) alignTo() (*pipepb.TimestampTransform, error) {
	p.word()
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	if len(args) != 2 || args[0].trig != nil || args[1].trig != nil || args[0].tt != nil || args[1].tt != nil {
		return nil, fmt.Errorf("AlignTo takes a period and an offset")
	}
	return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_AlignTo_{
		AlignTo: &pipepb.TimestampTransform_AlignTo{Period: args[0].num, Offset: args[1].num}}}, nil
}

func (p *trigParser) peekWord() string {
	i := p.i
	w := p.word()
	p.i = i
	return w
}

var triggerBuilders = map[string]func([]trigArg) (*pipepb.Trigger, error){
	"Default": func(a []trigArg) (*pipepb.Trigger, error) {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}, wantArgs(a, 0)
	},
	"Never": func(a []trigArg) (*pipepb.Trigger, error) {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Never_{Never: &pipepb.Trigger_Never{}}}, wantArgs(a, 0)
	},
	"Always": func(a []trigArg) (*pipepb.Trigger, error) {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Always_{Always: &pipepb.Trigger_Always{}}}, wantArgs(a, 0)
	},
	"AfterCount": func(a []trigArg) (*pipepb.Trigger, error) {
		if len(a) != 1 || a[0].trig != nil {
			return nil, fmt.Errorf("AfterCount takes one count")
		}
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: int32(a[0].num)}}}, nil
	},
	"AfterProcessingTime": afterProcessingTime,
	"AfterSynchronizedProcessingTime": func(a []trigArg) (*pipepb.Trigger, error) {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterSynchronizedProcessingTime_{
			AfterSynchronizedProcessingTime: &pipepb.Trigger_AfterSynchronizedProcessingTime{}}}, wantArgs(a, 0)
	},
	"AfterWatermark": afterWatermark,
	"Repeatedly": func(a []trigArg) (*pipepb.Trigger, error) {
		subs, err := subTriggers(a, 1)
		if err != nil {
			return nil, err
		}
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: subs[0]}}}, nil
	},
	"AfterAny": func(a []trigArg) (*pipepb.Trigger, error) {
		subs, err := subTriggers(a, -1)
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: subs}}}, err
	},
	"AfterAll": func(a []trigArg) (*pipepb.Trigger, error) {
		subs, err := subTriggers(a, -1)
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAll_{AfterAll: &pipepb.Trigger_AfterAll{Subtriggers: subs}}}, err
	},
	"AfterEach": func(a []trigArg) (*pipepb.Trigger, error) {
		subs, err := subTriggers(a, -1)
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEach_{AfterEach: &pipepb.Trigger_AfterEach{Subtriggers: subs}}}, err
	},
	"OrFinally": func(a []trigArg) (*pipepb.Trigger, error) {
		subs, err := subTriggers(a, 2)
		if err != nil {
			return nil, err
		}
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_OrFinally_{OrFinally: &pipepb.Trigger_OrFinally{Main: subs[0], Finally: subs[1]}}}, nil
	},
}

// afterProcessingTime's arguments are its timestamp transforms: delays in
// milliseconds and AlignTo.
func afterProcessingTime(args []trigArg) (*pipepb.Trigger, error) {
	var tts []*pipepb.TimestampTransform
	for i, a := range args {
		switch {
		case a.trig != nil || a.name != "":
			return nil, fmt.Errorf("AfterProcessingTime argument %d is not a delay or AlignTo", i+1)
		case a.tt != nil:
			tts = append(tts, a.tt)
		default:
			tts = append(tts, &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_Delay_{
				Delay: &pipepb.TimestampTransform_Delay{DelayMillis: a.num}}})
		}
	}
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{
		AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{TimestampTransforms: tts}}}, nil
}

func afterWatermark(args []trigArg) (*pipepb.Trigger, error) {
	var early, late *pipepb.Trigger
	for _, a := range args {
		switch {
		case a.trig == nil:
			return nil, fmt.Errorf("AfterWatermark takes triggers")
		case a.name == "early":
			early = a.trig
		case a.name == "late":
			late = a.trig
		default:
			return nil, fmt.Errorf("AfterWatermark takes early= and late=, not %q", a.name)
		}
	}
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: early, LateFirings: late}}}, nil
}

// subTriggers checks that args are n unnamed triggers (n < 0: any number
// but zero).
func subTriggers(args []trigArg, n int) ([]*pipepb.Trigger, error) {
	if n < 0 && len(args) == 0 {
		return nil, fmt.Errorf("want at least one subtrigger")
	}
	if n >= 0 && len(args) != n {
		return nil, fmt.Errorf("want %d subtriggers, got %d", n, len(args))
	}
	out := make([]*pipepb.Trigger, len(args))
	for i, a := range args {
		if a.trig == nil || a.name != "" {
			return nil, fmt.Errorf("argument %d is not a subtrigger", i+1)
		}
		out[i] = a.trig
	}
	return out, nil
}

func wantArgs(a []trigArg, n int) error {
	if len(a) != n {
		return fmt.Errorf("want %d arguments, got %d", n, len(a))
	}
	return nil
}
