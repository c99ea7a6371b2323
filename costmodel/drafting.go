package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Drafting is a model with the drafter's cost of speculative decoding
// added: before a step verifies draft tokens (Batch.Verify), a drafter
// proposed them. Three drafters, by their cost:
//
//   - a draft model: DraftStep per draft position, paid once per step
//     for the longest draft in it (the draft model runs its K steps
//     batched across the sequences, one after the other);
//   - drafting heads on the target model (EAGLE, MTP): Overhead, a
//     fraction of the verification step per draft position, since the
//     heads run once per draft token (an EAGLE head is about one decoder
//     layer: 1/L of the step for an L-layer target);
//   - n-gram (prompt lookup) drafting: neither, the zero Drafting.
//
// A step that verifies no draft costs what Model says. The zero value is
// free drafting on Frozen{}.
type Drafting struct {
	Model     Model         // the target model that verifies; nil means Frozen{}
	DraftStep time.Duration // a draft model's step per draft position, >= 0
	Overhead  float64       // drafting heads' cost per draft position, a fraction of the step, >= 0
}

// Validate refuses negative or non-finite figures.
func (d Drafting) Validate() error {
	var errs []error
	if d.DraftStep < 0 {
		errs = append(errs, fmt.Errorf("costmodel: Drafting.DraftStep must be >= 0, got %v", d.DraftStep))
	}
	if !(d.Overhead >= 0) || math.IsInf(d.Overhead, 0) {
		errs = append(errs, fmt.Errorf("costmodel: Drafting.Overhead must be a finite fraction >= 0, got %v", d.Overhead))
	}
	if v, ok := d.Model.(interface{ Validate() error }); ok {
		errs = append(errs, v.Validate())
	}
	return errors.Join(errs...)
}

// StepTime prices the verification with Model and adds the drafting.
func (d Drafting) StepTime(b Batch) time.Duration {
	m := d.Model
	if m == nil {
		m = Frozen{}
	}
	step := m.StepTime(b)
	if d.DraftStep == 0 && d.Overhead == 0 {
		return step // n-gram drafting: longest × (0 + Round(0 × step)) is 0
	}
	longest := 0
	for _, v := range b.Verify {
		longest = max(longest, v-1)
	}
	if longest == 0 {
		return step
	}
	return step + time.Duration(longest)*(d.DraftStep+time.Duration(math.Round(d.Overhead*float64(step))))
}

func (d Drafting) String() string {
	base := "costmodel.Frozen{}"
	if d.Model != nil {
		base = fmt.Sprintf("%T", d.Model)
	}
	switch {
	case d.DraftStep > 0 && d.Overhead > 0:
		return fmt.Sprintf("%s + a draft model (%v per draft) + heads (%g of the step per draft)", base, d.DraftStep, d.Overhead)
	case d.DraftStep > 0:
		return fmt.Sprintf("%s + a draft model (%v per draft)", base, d.DraftStep)
	case d.Overhead > 0:
		return fmt.Sprintf("%s + drafting heads (%g of the step per draft)", base, d.Overhead)
	}
	return base + " + free drafting (n-gram)"
}
