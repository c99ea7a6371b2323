package costmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/gonum/interp"
)

// TablePoint is one measured step time of a Table: at X the step took Ms
// milliseconds. What X counts depends on the curve (Table.Decode or
// Table.Prefill).
type TablePoint struct {
	X  float64 // sequences or tokens, >= 0, strictly increasing along a curve
	Ms float64 // step time, milliseconds, > 0, non-decreasing along a curve
}

// Table prices a step from measured step times, shaped like Frozen: a step
// with decoding sequences pays the Decode curve at its number of decoding
// sequences, a step with prefill pays the Prefill curve at its number of
// prefill tokens, and a mixed step pays both. Decode context is not an axis:
// measure the curve at the context you serve, or use Linear or Fit when
// context matters. Draft positions a speculative decode verifies beyond
// one per sequence (Batch.Verify) are priced at the Prefill curve's mean
// slope over its samples, without its step cost: the same forward pass
// computes them like prompt tokens.
//
// Between samples the curves are piecewise linear (gonum's interp), so the
// model is exact at its samples. Below the first sample a curve holds the
// first value; beyond the last it continues the last segment's slope (or
// holds the only value), because a long prompt costs more than the longest
// measured one. Lookup says when either happened.
//
// The zero Table is invalid; both curves need at least one sample. Build
// checks and compiles it into a TableModel.
type Table struct {
	Decode  []TablePoint // X: decoding sequences in the step; Ms: pure-decode step time
	Prefill []TablePoint // X: prefill tokens in the step; Ms: prefill-only step time
}

// Validate names every sample that is out of range or out of order.
func (t Table) Validate() error {
	return errors.Join(validCurve("Table.Decode", t.Decode), validCurve("Table.Prefill", t.Prefill))
}

func validCurve(path string, ps []TablePoint) error {
	if len(ps) == 0 {
		return fmt.Errorf("costmodel: %s needs at least one sample", path)
	}
	var errs []error
	for i, p := range ps {
		field := fmt.Sprintf("%s[%d]", path, i)
		errs = append(errs, nonNegative(field+".X", p.X), positive(field+".Ms", p.Ms))
		if i == 0 {
			continue
		}
		if q := ps[i-1]; !(p.X > q.X) {
			errs = append(errs, fmt.Errorf("costmodel: %s.X must be > %s[%d].X, got %v <= %v", field, path, i-1, p.X, q.X))
		} else if p.Ms < q.Ms {
			errs = append(errs, fmt.Errorf("costmodel: %s.Ms must be >= %s[%d].Ms (step times cannot fall as work grows), got %v < %v", field, path, i-1, p.Ms, q.Ms))
		}
	}
	return errors.Join(errs...)
}

// Build validates t and compiles it for pricing.
func (t Table) Build() (*TableModel, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &TableModel{
		src:     Table{Decode: slices.Clone(t.Decode), Prefill: slices.Clone(t.Prefill)},
		decode:  newCurve("Decode", "sequences", t.Decode),
		prefill: newCurve("Prefill", "tokens", t.Prefill),
	}, nil
}

// TableModel is a compiled Table. It is immutable and safe for concurrent use.
type TableModel struct {
	src             Table
	decode, prefill curve
}

// Table returns the samples the model was built from.
func (m *TableModel) Table() Table {
	return Table{Decode: slices.Clone(m.src.Decode), Prefill: slices.Clone(m.src.Prefill)}
}

// MarshalJSON writes the model as its Table: configurations are data.
func (m *TableModel) MarshalJSON() ([]byte, error) { return json.Marshal(m.src) }

// UnmarshalJSON reads a Table and builds it, refusing what Validate does.
func (m *TableModel) UnmarshalJSON(b []byte) error {
	var t Table
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return fmt.Errorf("costmodel: a TableModel is its Table {Decode, Prefill}: %w", err)
	}
	built, err := t.Build()
	if err != nil {
		return err
	}
	*m = *built
	return nil
}

// TableWarning is a readable note that a step time was read outside the
// measured range of a Table; the empty TableWarning means the step was
// inside it.
type TableWarning string

// DecodeSum reports true: the decode curve is read at the number of
// decodes, whatever their contexts (see DecodeSum).
func (*TableModel) DecodeSum() bool { return true }

// ContextFree reports true: the decode curve is read at the number of
// decodes alone (see ContextFree).
func (*TableModel) ContextFree() bool { return true }

// StepTime prices b; outside the measured range it clamps or extrapolates as
// Table documents, silently. It does not allocate.
func (m *TableModel) StepTime(b Batch) time.Duration {
	d, _, _ := m.price(b)
	return d
}

// Lookup prices b like StepTime and also returns a Warning when a curve was
// read outside its samples.
func (m *TableModel) Lookup(b Batch) (time.Duration, TableWarning) {
	d, decodeOut, prefillOut := m.price(b)
	var w []error
	if decodeOut {
		w = append(w, m.decode.warning(float64(len(b.Decode))))
	}
	if prefillOut {
		w = append(w, m.prefill.warning(float64(b.PrefillTokens())))
	}
	if len(w) == 0 {
		return d, ""
	}
	return d, TableWarning(errors.Join(w...).Error())
}

// price returns the step time and whether each curve was read outside its
// samples.
func (m *TableModel) price(b Batch) (d time.Duration, decodeOut, prefillOut bool) {
	if m == nil || b.Empty() { // a nil TableModel was never built: it prices nothing
		return 0, false, false
	}
	ms := 0.0
	if n := len(b.Decode); n > 0 {
		v, out := m.decode.at(float64(n))
		ms, decodeOut = ms+v, out
		if x := b.ExtraVerified(); x > 0 {
			ms += float64(x) * m.prefill.meanSlope()
		}
	}
	if n := b.PrefillTokens(); n > 0 {
		v, out := m.prefill.at(float64(n))
		ms, prefillOut = ms+v, out
	}
	return stepDuration(ms), decodeOut, prefillOut
}

// curve is one compiled Table curve.
type curve struct {
	name, unit string
	lo, hi     float64          // measured X range
	last       float64          // Ms at hi
	slope      float64          // ms per unit of X beyond hi
	pred       interp.Predictor // inside [lo, hi]; holds the end values outside
}

func newCurve(name, unit string, ps []TablePoint) curve {
	n := len(ps)
	c := curve{name: name, unit: unit, lo: ps[0].X, hi: ps[n-1].X, last: ps[n-1].Ms}
	if n == 1 {
		c.pred = interp.Constant(ps[0].Ms)
		return c
	}
	xs, ys := make([]float64, n), make([]float64, n)
	for i, p := range ps {
		xs[i], ys[i] = p.X, p.Ms
	}
	var pl interp.PiecewiseLinear
	_ = pl.Fit(xs, ys) // always nil; Validate ruled out its panics
	c.pred = pl
	c.slope = (ys[n-1] - ys[n-2]) / (xs[n-1] - xs[n-2])
	return c
}

// meanSlope is the curve's mean slope over its samples (ms per unit of X),
// or the slope beyond them with a single sample (0).
func (c curve) meanSlope() float64 {
	if c.hi <= c.lo {
		return c.slope
	}
	return (c.last - c.pred.Predict(c.lo)) / (c.hi - c.lo)
}

// at reads the curve at x and reports whether x is outside the samples.
// Beyond the last sample it extrapolates linearly by hand: gonum's
// PiecewiseLinear holds the end value, which would make any prompt longer
// than the longest measured one cost the same.
func (c curve) at(x float64) (ms float64, out bool) {
	if x > c.hi {
		return c.last + c.slope*(x-c.hi), true
	}
	return c.pred.Predict(x), x < c.lo
}

func (c curve) warning(x float64) error {
	how := "held at the first sample"
	if x > c.hi {
		how = "extrapolated from the last segment"
	}
	return fmt.Errorf("costmodel: Table.%s read at %v %s, outside the measured %v–%v; %s",
		c.name, x, c.unit, c.lo, c.hi, how)
}
