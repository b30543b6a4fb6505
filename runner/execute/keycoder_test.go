package execute

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
)

// customKey has a coder of its own (beam.RegisterCoder): beam:go:coder:custom:v1,
// which the runner cannot read; the Go SDK itself wraps it in a length
// prefix in the pipeline, so the runner sees where each key ends.
type customKey struct{ ID int }

func encodeCustomKey(k customKey) []byte { return []byte(fmt.Sprintf("key-%d", k.ID)) }

func decodeCustomKey(b []byte) (customKey, error) {
	var k customKey
	_, err := fmt.Sscanf(string(b), "key-%d", &k.ID)
	return k, err
}

// slowCustomKeyFn keys n by n%7 under customKey, slowly, so that bundles
// run long enough to be split.
func slowCustomKeyFn(n int) (customKey, int) {
	time.Sleep(time.Millisecond)
	return customKey{ID: n % 7}, n
}

// countPerKeyFn counts each key's elements in its state and emits the
// running count: the largest is the key's total only if every element of
// the key reached the same state.
type countPerKeyFn struct {
	Count state.Value[int]
}

func (f *countPerKeyFn) ProcessElement(sp state.Provider, k customKey, _ int, emit func(string, int)) error {
	c, _, err := f.Count.Read(sp)
	if err != nil {
		return err
	}
	c++
	if err := f.Count.Write(sp, c); err != nil {
		return err
	}
	emit(fmt.Sprintf("key-%d", k.ID), c)
	return nil
}

func sumCustomKeyGroup(k customKey, vs func(*int) bool) string {
	sum, n, v := 0, 0, 0
	for vs(&v) {
		sum, n = sum+v, n+1
	}
	return fmt.Sprintf("key-%d:%d:%d", k.ID, n, sum)
}

func formatKeyCount(k string, n int) string { return fmt.Sprintf("%s:%d", k, n) }

func emitRange(_ []byte, emit func(int)) {
	for i := 0; i < customKeyElements; i++ {
		emit(i)
	}
}

const customKeyElements = 1500

func init() {
	beam.RegisterType(reflect.TypeOf((*customKey)(nil)).Elem())
	beam.RegisterCoder(reflect.TypeOf((*customKey)(nil)).Elem(), encodeCustomKey, decodeCustomKey)
	beam.RegisterFunction(slowCustomKeyFn)
	beam.RegisterFunction(sumCustomKeyGroup)
	beam.RegisterFunction(formatKeyCount)
	beam.RegisterFunction(emitRange)
	beam.RegisterType(reflect.TypeOf((*countPerKeyFn)(nil)).Elem())
}

// TestCustomKeyCoderUnderSplits: keys of a coder the runner does not know
// (length-prefixed, so the runner groups and routes by the prefixed
// bytes) go through a GroupByKey and a stateful DoFn while
// the keying stage's bundles are split, and give what the values say:
// per key, every element once in its group and in its state.
func TestCustomKeyCoderUnderSplits(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	nums := beam.Reshuffle(s, beam.ParDo(s, emitRange, beam.Impulse(s)))
	keyed := beam.ParDo(s, slowCustomKeyFn, nums)
	groups := beam.ParDo(s, sumCustomKeyGroup, beam.GroupByKey(s, keyed))
	counts := beam.ParDo(s, &countPerKeyFn{Count: state.MakeValueState[int]("count")}, keyed)
	finals := beam.ParDo(s, formatKeyCount, stats.MaxPerKey(s, counts))
	var wantGroups, wantCounts []any
	for k := 0; k < 7; k++ {
		n, sum := 0, 0
		for i := k; i < customKeyElements; i += 7 {
			n, sum = n+1, sum+i
		}
		wantGroups = append(wantGroups, fmt.Sprintf("key-%d:%d:%d", k, n, sum))
		wantCounts = append(wantCounts, fmt.Sprintf("key-%d:%d", k, n))
	}
	passert.Equals(s, groups, wantGroups...)
	passert.Equals(s, finals, wantCounts...)
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := runPipelineWith(t, p, Options{Logger: logger, Parallelism: 2}, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "split running bundle"); n == 0 {
		t.Fatalf("no bundle was split: the test did not test splits")
	} else {
		t.Logf("%d splits", n)
	}
}
