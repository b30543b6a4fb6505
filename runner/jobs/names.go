package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// checkNames refuses names no SDK produces and the runner cannot carry
// safely (into logs, file names, descriptors): a job name or component id
// with a NUL byte or invalid UTF-8, and empty component ids.
func checkNames(jobName string, p *pipepb.Pipeline) error {
	if err := badName(jobName); err != "" {
		return fmt.Errorf("job name %q %s", jobName, err)
	}
	c := p.GetComponents()
	kinds := []struct {
		kind string
		ids  []string
	}{
		{"transform", slices.Sorted(maps.Keys(c.GetTransforms()))},
		{"PCollection", slices.Sorted(maps.Keys(c.GetPcollections()))},
		{"coder", slices.Sorted(maps.Keys(c.GetCoders()))},
		{"windowing strategy", slices.Sorted(maps.Keys(c.GetWindowingStrategies()))},
		{"environment", slices.Sorted(maps.Keys(c.GetEnvironments()))},
	}
	for _, k := range kinds {
		for _, id := range k.ids {
			if id == "" {
				return fmt.Errorf("a %s has an empty id", k.kind)
			}
			if err := badName(id); err != "" {
				return fmt.Errorf("%s id %q %s", k.kind, id, err)
			}
		}
	}
	if err := coders.ValidateGraph(c.GetCoders()); err != nil {
		return err
	}
	return nil
}

func badName(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL byte"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}
