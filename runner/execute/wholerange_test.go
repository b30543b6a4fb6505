package execute

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
)

// WholeRange is the restriction half of a test's splittable DoFn over
// [0, N): one restriction, not split before it runs, sized by its offsets.
// A DoFn embeds it and adds its ProcessElement.
type WholeRange struct{ N int64 }

func (w WholeRange) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: w.N}
}

func (w WholeRange) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (w WholeRange) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 {
	return r.Size()
}

func (w WholeRange) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}
