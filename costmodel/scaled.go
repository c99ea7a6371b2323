package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Scaled is another model with every step time multiplied by Factor: how
// the result moves if the model is off by that much (a model-error band
// runs ×0.9 and ×1.1 of the model it declares uncertain). Step times are
// rounded to the nanosecond and stay at least 1 ns for a non-empty batch.
type Scaled struct {
	Model  Model   // nil means Frozen{}
	Factor float64 // > 0; 1 is the model itself
}

// Validate refuses a factor that is not a positive finite number.
func (s Scaled) Validate() error {
	var errs []error
	if !(s.Factor > 0) || math.IsInf(s.Factor, 0) {
		errs = append(errs, fmt.Errorf("costmodel: Scaled.Factor must be a positive finite number, got %v", s.Factor))
	}
	if v, ok := s.Model.(interface{ Validate() error }); ok {
		errs = append(errs, v.Validate())
	}
	return errors.Join(errs...)
}

// StepTime prices b with the model and scales the result.
func (s Scaled) StepTime(b Batch) time.Duration {
	m := s.Model
	if m == nil {
		m = Frozen{}
	}
	d := m.StepTime(b)
	if d <= 0 {
		return d
	}
	return max(1, time.Duration(math.Round(float64(d)*s.Factor)))
}

// DecodeSum reports whether the scaled model's price reads the decode
// contexts only through their number and sum (see DecodeSum): scaling
// keeps that.
func (s Scaled) DecodeSum() bool {
	if s.Model == nil {
		return true // Frozen{}
	}
	ds, ok := s.Model.(DecodeSum)
	return ok && ds.DecodeSum()
}

// ContextFree reports whether the scaled model's price reads nothing of the
// decode contexts (see ContextFree): scaling keeps that.
func (s Scaled) ContextFree() bool {
	if s.Model == nil {
		return true // Frozen{}
	}
	cf, ok := s.Model.(ContextFree)
	return ok && cf.ContextFree()
}

// PrefillContextFree reports whether the scaled model's price reads
// nothing of the prefill chunks' contexts (see PrefillContextFree):
// scaling keeps that.
func (s Scaled) PrefillContextFree() bool {
	if s.Model == nil {
		return true // Frozen{}
	}
	pf, ok := s.Model.(PrefillContextFree)
	return ok && pf.PrefillContextFree()
}

func (s Scaled) String() string {
	if s.Model == nil {
		return fmt.Sprintf("costmodel.Frozen{} × %g", s.Factor)
	}
	return fmt.Sprintf("%T × %g", s.Model, s.Factor)
}
