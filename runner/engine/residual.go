package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// delayed is a residual waiting for its processing time.
type delayed struct {
	data    []byte
	readyAt int64
	hold    int64
}

// deferResiduals files a bundle's residuals to run again at now+delay.
func (f *flow) deferResiduals(st *stage, rs []Residual) error {
	if len(rs) == 0 {
		return nil
	}
	in := f.pcolls[st.spec.Inputs[0]]
	for _, r := range rs {
		hold := r.Hold
		if !r.Held {
			var v coders.WindowedValue
			if _, err := in.spec.Codec.Parse(r.Element, &v); err != nil {
				return fmt.Errorf("stage %s: residual: %w", st.spec.ID, err)
			}
			hold = v.Timestamp
		}
		st.delayed = append(st.delayed, delayed{data: r.Element, readyAt: f.now + r.Delay, hold: hold})
	}
	return nil
}

// wakeResiduals moves residuals whose time has come back to pending input.
func (f *flow) wakeResiduals(st *stage) {
	kept := st.delayed[:0]
	for _, d := range st.delayed {
		if d.readyAt > f.now {
			kept = append(kept, d)
			continue
		}
		f.requeue(st, d)
	}
	st.delayed = kept
}

func (f *flow) requeue(st *stage, d delayed) {
	if st.keyed != nil {
		if err := st.keyed.file(d.data); err != nil {
			f.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, st.spec.Inputs[0], err))
		}
		return
	}
	st.pending = append(st.pending, chunk{data: d.data, minTS: d.hold})
}

// delayedWatermark holds a stage's output at its waiting residuals.
func (st *stage) delayedWatermark(wm int64) int64 {
	for _, d := range st.delayed {
		wm = min(wm, d.hold)
	}
	return wm
}
