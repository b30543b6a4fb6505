package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"
)

// lineArgs are the arguments of one script line, as datadriven parses
// them: bare words in order, and key=value options. Readers take what they
// need; finish reports the first problem, or anything left unread, naming
// the line.
type lineArgs struct {
	where string
	words []string
	opts  map[string][]string
	err   error
}

func newLineArgs(where string, args []datadriven.CmdArg) *lineArgs {
	a := &lineArgs{where: where, opts: map[string][]string{}}
	for _, arg := range args {
		if arg.Vals == nil {
			a.words = append(a.words, arg.Key)
		} else {
			a.opts[arg.Key] = arg.Vals
		}
	}
	return a
}

func (a *lineArgs) fail(err error) {
	if a.err == nil && err != nil {
		a.err = err
	}
}

// word takes the next bare word; what names it for the error if missing.
func (a *lineArgs) word(what string) string {
	if len(a.words) == 0 {
		a.fail(fmt.Errorf("missing %s", what))
		return ""
	}
	w := a.words[0]
	a.words = a.words[1:]
	return w
}

// rest takes every bare word left.
func (a *lineArgs) rest() []string {
	out := a.words
	a.words = nil
	return out
}

// flag takes the bare word name, reporting whether it was there.
func (a *lineArgs) flag(name string) bool {
	for i, w := range a.words {
		if w == name {
			a.words = append(a.words[:i:i], a.words[i+1:]...)
			return true
		}
	}
	return false
}

func (a *lineArgs) has(key string) bool { _, ok := a.opts[key]; return ok }

// list takes the values of key=(v1,v2) or key=v.
func (a *lineArgs) list(key string) []string {
	vs := a.opts[key]
	delete(a.opts, key)
	return vs
}

func (a *lineArgs) str(key, def string) string {
	vs, ok := a.opts[key]
	if !ok {
		return def
	}
	delete(a.opts, key)
	if len(vs) != 1 {
		a.fail(fmt.Errorf("%s takes one value, got %d", key, len(vs)))
		return def
	}
	return vs[0]
}

func (a *lineArgs) int(key string, def int64) int64 {
	s := a.str(key, "")
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		a.fail(fmt.Errorf("%s=%s: not an integer", key, s))
	}
	return n
}

func (a *lineArgs) ts(key string, def int64) int64 {
	s := a.str(key, "")
	if s == "" {
		return def
	}
	t, err := parseTS(s)
	a.fail(err)
	return t
}

// finish returns the first problem with the line, naming it.
func (a *lineArgs) finish() error {
	if a.err == nil && len(a.words) > 0 {
		a.err = fmt.Errorf("unexpected %s", strings.Join(a.words, " "))
	}
	if a.err == nil && len(a.opts) > 0 {
		a.err = fmt.Errorf("unknown option %s=", strings.Join(slices.Sorted(maps.Keys(a.opts)), "=, "))
	}
	if a.err != nil {
		return fmt.Errorf("%s: %w", a.where, a.err)
	}
	return nil
}
