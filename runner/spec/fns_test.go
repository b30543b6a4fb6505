package spec

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// The DoFns of the pipelines these tests plan; nothing runs them.
func init() {
	beam.RegisterFunction(countGroup)
	beam.RegisterFunction(keyByLen)
	beam.RegisterFunction(emitOneKey)
	beam.RegisterFunction(sumLengths)
}

func countGroup(k int, vs func(*string) bool) int { return k }

func keyByLen(s string) (int, string) { return len(s), s }

func emitOneKey(_ []byte, emit func(int, string)) { emit(1, "v") }

func sumLengths(_ int, vs func(*string) bool) int { return 0 }
