package coders

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// ValidateGraph checks a pipeline's coder graph: every component names a
// defined coder and no coder contains itself. A cycle (say a length_prefix
// coder whose component is itself) would recurse forever when compiled,
// so it is refused up front, naming the coders on the cycle.
func ValidateGraph(cs map[string]*pipepb.Coder) error {
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case done:
			return nil
		case visiting:
			i := len(path) - 1
			for i > 0 && path[i] != id {
				i--
			}
			return fmt.Errorf("coder %q contains itself: %s", id, strings.Join(append(path[i:], id), " -> "))
		}
		state[id] = visiting
		path = append(path, id)
		for _, comp := range cs[id].GetComponentCoderIds() {
			if _, ok := cs[comp]; !ok {
				return fmt.Errorf("coder %q refers to undefined component coder %q", id, comp)
			}
			if err := visit(comp); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	// Sorted: the same pipeline gets the same error.
	for _, id := range slices.Sorted(maps.Keys(cs)) {
		if cs[id] == nil {
			return fmt.Errorf("coder %q is empty", id)
		}
		if err := visit(id); err != nil {
			return err
		}
	}
	return nil
}
