// Package fieldcheck compares a struct type's fields with the list a
// snapshot format knows, so tests fail when state is added or removed
// without the format following.
package fieldcheck

import (
	"reflect"
	"strings"
)

// diff returns the fields of typ missing from known (space-separated
// names) and the names in known that typ no longer has.
func diff(typ reflect.Type, known string) (added, removed []string) {
	want := map[string]bool{}
	for _, f := range strings.Fields(known) {
		want[f] = true
	}
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if !want[name] {
			added = append(added, name)
		}
		delete(want, name)
	}
	for name := range want {
		removed = append(removed, name)
	}
	return added, removed
}

// Errorf is the part of testing.TB that Check reports through.
type Errorf interface {
	Errorf(format string, args ...any)
}

// Check reports each field of the listed types that what (e.g. "the
// engine snapshot", written in file) does not know, and each listed name
// the type no longer has.
func Check(t Errorf, types map[reflect.Type]string, what, file string) {
	for typ, known := range types {
		added, removed := diff(typ, known)
		for _, name := range added {
			t.Errorf("%s has field %s that %s does not know: write it in %s (bumping its version) or say why it needs no saving, then list it here", typ, name, what, file)
		}
		for _, name := range removed {
			t.Errorf("%s no longer has field %s: update %s and this list", typ, name, file)
		}
	}
}
