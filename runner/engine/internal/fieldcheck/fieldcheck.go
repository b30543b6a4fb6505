// Package fieldcheck compares a struct type's fields with the list a
// snapshot format knows, so tests fail when state is added or removed
// without the format following.
package fieldcheck

import (
	"reflect"
	"strings"
)

// Diff returns the fields of typ missing from known (space-separated
// names) and the names in known that typ no longer has.
func Diff(typ reflect.Type, known string) (added, removed []string) {
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
