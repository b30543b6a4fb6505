package savepoint

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mapping renames steps from a savepoint's pipeline to a new one's: old
// unique name to new (--transform_name_mapping). A step it does not
// name keeps its name; a composite's name renames the steps inside it
// ("count" -> "tally" renames "count/Stateful" to "tally/Stateful"),
// the longest entry first, as Dataflow's prefix mappings do.
type Mapping map[string]string

// Apply is name's new name under m.
func (m Mapping) Apply(name string) string {
	if to, ok := m[name]; ok {
		return to
	}
	best := ""
	for from := range m {
		if len(from) > len(best) && strings.HasPrefix(name, from+"/") {
			best = from
		}
	}
	if best == "" {
		return name
	}
	return m[best] + name[len(best):]
}

// Check decides whether a new pipeline, whose stateful and grouping
// steps are now, can start from a savepoint whose steps were old: each
// old step must be in the new pipeline (by unique name, after mapping),
// of the same kind, with the same key, value and window coders and, for
// a stateful ParDo, the same state specs and timer families; otherwise
// its state would be lost or misread. Steps only the new pipeline has
// start empty, and stateless steps are not its concern. The error names
// every step refused and why. Pure.
func Check(old, now []Step, m Mapping) error { return CheckDropping(old, now, m, false) }

// CheckDropping is Check that, with allowDropped (--allow_dropped_state),
// lets the new pipeline leave out old steps, dropping their state on
// purpose (Flink's allowNonRestoredState).
func CheckDropping(old, now []Step, m Mapping, allowDropped bool) error {
	byName := map[string]Step{}
	for _, s := range now {
		byName[s.Name] = s
	}
	var errs []error
	for _, o := range old {
		name := m.Apply(o.Name)
		n, ok := byName[name]
		if !ok && allowDropped {
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s step %q is not in the new pipeline: its state would be lost (map its new name with --transform_name_mapping, or drop its state with --allow_dropped_state)", o.Kind, o.Name))
			continue
		}
		for _, why := range stepChanges(o, n) {
			errs = append(errs, fmt.Errorf("%s step %q: %s", o.Kind, name, why))
		}
	}
	return errors.Join(errs...)
}

// stepChanges lists why step n cannot hold o's state; none if it can.
func stepChanges(o, n Step) []string {
	if o.Kind != n.Kind {
		return []string{fmt.Sprintf("was a %s step, is now a %s one", o.Kind, n.Kind)}
	}
	var out []string
	for _, c := range []struct {
		what string
		o, n Coder
	}{{"key coder", o.Key, n.Key}, {"value coder", o.Value, n.Value}, {"window coder", o.Window, n.Window}} {
		if c.o.Spec != c.n.Spec {
			out = append(out, fmt.Sprintf("its %s changed from %s to %s: the saved state could not be read", c.what, orNone(c.o.Spec), orNone(c.n.Spec)))
		}
	}
	if o.Windowing != "" && n.Windowing != "" && o.Windowing != n.Windowing {
		out = append(out, fmt.Sprintf("its windowing changed from %s to %s: its open windows could not be kept", o.Windowing, n.Windowing))
	}
	for _, id := range slices.Sorted(maps.Keys(o.State)) {
		switch ns, ok := n.State[id]; {
		case !ok:
			out = append(out, fmt.Sprintf("its state %q (%s) was removed: its contents would be lost", id, o.State[id]))
		case ns != o.State[id]:
			out = append(out, fmt.Sprintf("its state %q changed from %s to %s", id, o.State[id], ns))
		}
	}
	for _, t := range o.Timers {
		if !slices.Contains(n.Timers, t) {
			out = append(out, fmt.Sprintf("its timer family %q was removed: its set timers would be lost", t))
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
