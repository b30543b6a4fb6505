package plan

import (
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// Where data crosses from one SDK to another, the reading SDK may not know
// a coder the writing one used (a Go custom coder read by Python, say).
// Such coders are SDK-specific by URN, and SDKs do not declare them.
// Such a coder always sits under a length prefix on the wire (the runner
// wraps what it does not know itself), so the reader can be given
// length_prefix(bytes) instead: the same bytes, read as opaque values.

// InputCoder is what an SDK stage is told a PCollection it reads is
// coded with, when that differs from the PCollection's own coders.
type InputCoder struct {
	Elem string // element coder of the PCollection in the descriptor
	Wire string // windowed value coder of the data port
	// StateBacked: the SDK reads the GroupByKey values in it as a
	// state-backed iterable (statebacked.go).
	StateBacked bool
}

// sdkSpecific are coder URN prefixes only one SDK reads (SDKs do not
// declare these as capabilities): a Go custom coder, Python's pickled
// objects, Java's serialized coders.
var sdkSpecific = []struct{ prefix, lang string }{
	{"beam:go:", "go"},
	{"beam:coder:pickled_python:", "python"},
	{"beam:coder:python:", "python"},
	{"beam:coders:javasdk:", "java"},
	{"beam:coder:java:", "java"},
}

// coderLanguage is the SDK a coder URN belongs to, "" for portable ones.
func coderLanguage(urn string) string {
	for _, s := range sdkSpecific {
		if strings.HasPrefix(urn, s.prefix) {
			return s.lang
		}
	}
	return ""
}

// envLanguage is the SDK of an environment, from its sdk_base capability
// (sdkenv); "" if unknown.
func envLanguage(env *pipepb.Environment) string {
	return string(sdkenv.SDKOf(env))
}

// foreignInputs sets, for each SDK stage, the input coders to give it in
// place of coders its environment does not know.
func (p *Plan) foreignInputs() {
	for _, s := range p.Stages {
		if s.Kind != stagekind.SDK {
			continue
		}
		lang := envLanguage(p.Components.GetEnvironments()[s.Env])
		if lang == "" {
			continue
		}
		r := foreignRewriter{coders: p.Components.GetCoders(), lang: lang}
		reads := append([]string{}, s.Inputs[:1]...)
		for _, si := range s.SideInputs {
			reads = append(reads, si.PColl)
		}
		for _, pc := range reads {
			col := p.Components.GetPcollections()[pc]
			elem, changed := r.rewrite(col.GetCoderId())
			if !changed {
				continue
			}
			if s.InputCoders == nil {
				s.InputCoders = map[string]InputCoder{}
			}
			wv := p.Components.GetCoders()[p.Wire[pc]]
			wire := internCoder(p.Components.GetCoders(), p.Wire[pc]+"_sdk", &pipepb.Coder{
				Spec: wv.GetSpec(), ComponentCoderIds: append([]string{elem}, wv.GetComponentCoderIds()[1:]...)})
			s.InputCoders[pc] = InputCoder{Elem: elem, Wire: wire}
		}
	}
}

type foreignRewriter struct {
	coders map[string]*pipepb.Coder
	lang   string // the reading SDK's
}

func (r foreignRewriter) knows(id string, depth int) bool {
	c := r.coders[id]
	if c == nil || depth > 64 {
		return false
	}
	if l := coderLanguage(c.GetSpec().GetUrn()); l != "" && l != r.lang {
		return false
	}
	for _, sub := range c.GetComponentCoderIds() {
		if !r.knows(sub, depth+1) {
			return false
		}
	}
	return true
}

// rewrite returns id's coder with each length-prefixed subtree holding
// another SDK's coder replaced by length_prefix(bytes).
func (r foreignRewriter) rewrite(id string) (string, bool) {
	c := r.coders[id]
	if c == nil {
		return id, false
	}
	if c.GetSpec().GetUrn() == coders.URNLengthPrefix {
		if len(c.GetComponentCoderIds()) == 1 && !r.knows(c.GetComponentCoderIds()[0], 0) {
			bytesID := internCoder(r.coders, "sdk_bytes", &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}})
			return internCoder(r.coders, "sdk_lp_bytes", &pipepb.Coder{
				Spec: &pipepb.FunctionSpec{Urn: coders.URNLengthPrefix}, ComponentCoderIds: []string{bytesID}}), true
		}
		return id, false
	}
	subs := c.GetComponentCoderIds()
	out := make([]string, len(subs))
	changed := false
	for i, sub := range subs {
		nid, ch := r.rewrite(sub)
		out[i], changed = nid, changed || ch
	}
	if !changed {
		return id, false
	}
	return internCoder(r.coders, id+"_sdk", &pipepb.Coder{Spec: c.GetSpec(), ComponentCoderIds: out}), true
}

// internCoder stores c under base (or base1, base2, ...), reusing an
// identical coder already stored there.
func internCoder(m map[string]*pipepb.Coder, base string, c *pipepb.Coder) string {
	for i := 0; ; i++ {
		id := base
		if i > 0 {
			id += "_" + strconv.Itoa(i)
		}
		old, ok := m[id]
		if !ok {
			m[id] = c
			return id
		}
		if sameCoder(old, c) {
			return id
		}
	}
}

func sameCoder(a, b *pipepb.Coder) bool {
	if a.GetSpec().GetUrn() != b.GetSpec().GetUrn() || string(a.GetSpec().GetPayload()) != string(b.GetSpec().GetPayload()) || len(a.GetComponentCoderIds()) != len(b.GetComponentCoderIds()) {
		return false
	}
	for i := range a.GetComponentCoderIds() {
		if a.GetComponentCoderIds()[i] != b.GetComponentCoderIds()[i] {
			return false
		}
	}
	return true
}
