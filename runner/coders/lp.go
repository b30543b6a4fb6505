package coders

import (
	"fmt"
	"strconv"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// LPUnknown returns the id of a coder equal to coderID except that every
// sub-coder the runner does not know is wrapped in
// beam:coder:length_prefix:v1, so the runner can find element boundaries in
// whatever the SDK sends. Subtrees already under a length prefix are left
// alone. New coders get ids derived from the original (id+"_lp", then
// id+"_lp1", ... if taken by a different coder), so repeated calls reuse them
// and add nothing. It returns coderID itself when nothing needs wrapping.
func LPUnknown(coders map[string]*pipepb.Coder, coderID string) (string, error) {
	w := lpWrapper{coders: coders, active: map[string]bool{}}
	return w.rewrite(coderID)
}

type lpWrapper struct {
	coders map[string]*pipepb.Coder
	active map[string]bool // ids being rewritten, to reject cycles
}

func (w *lpWrapper) rewrite(id string) (string, error) {
	c, urn, err := lookup(w.coders, id)
	if err != nil {
		return "", err
	}
	switch {
	case urn == URNLengthPrefix:
		return id, nil
	case !Known(urn):
		lp := &pipepb.Coder{
			Spec:              &pipepb.FunctionSpec{Urn: URNLengthPrefix},
			ComponentCoderIds: []string{id},
		}
		return w.intern(id, lp), nil
	case w.active[id]:
		return "", fmt.Errorf("coders: coder %q (%s) refers to itself", id, urn)
	}
	w.active[id] = true
	defer delete(w.active, id)
	comps, changed, err := w.rewriteAll(c.GetComponentCoderIds())
	if err != nil || !changed {
		return id, err
	}
	nc := proto.Clone(c).(*pipepb.Coder)
	nc.ComponentCoderIds = comps
	return w.intern(id, nc), nil
}

// rewriteAll rewrites components, reporting whether any id changed.
func (w *lpWrapper) rewriteAll(ids []string) ([]string, bool, error) {
	out := make([]string, len(ids))
	changed := false
	for i, sub := range ids {
		nid, err := w.rewrite(sub)
		if err != nil {
			return nil, false, err
		}
		out[i] = nid
		changed = changed || nid != sub
	}
	return out, changed, nil
}

// intern stores c under an id derived from orig, reusing an identical coder
// stored by an earlier call.
func (w *lpWrapper) intern(orig string, c *pipepb.Coder) string {
	for i := 0; ; i++ {
		id := orig + "_lp"
		if i > 0 {
			id += strconv.Itoa(i)
		}
		existing, ok := w.coders[id]
		if !ok {
			w.coders[id] = c
			return id
		}
		if proto.Equal(existing, c) {
			return id
		}
	}
}
