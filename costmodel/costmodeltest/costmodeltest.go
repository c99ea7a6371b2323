package costmodeltest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// maxProblems caps the problems Check reports: a broken model usually breaks
// on most shapes, and the first few say why.
const maxProblems = 10

// shapes is the number of seeded batch shapes Check tries.
const shapes = 200

// Check runs the costmodel.Model contract against m and returns every
// violation found (at most a handful, joined), or nil:
//
//   - the empty batch (nil or empty slices) costs exactly 0;
//   - every non-empty batch of a seeded family of shapes, and the smallest
//     ones (one decode at context 0, one 1-token chunk), costs > 0;
//   - pricing is deterministic: the same batch costs the same, before and
//     after other batches are priced, and the batch is not modified;
//   - the cost never falls when a decode or a chunk is added, when a decode's
//     context or verified positions grow, or when a chunk's tokens or
//     context grow;
//   - a Batch.Verify of all ones (no drafts) costs what a nil Verify does.
//
// A panic inside m.StepTime is reported as a violation, not propagated.
// The shapes are the same on every call (seed 1, 1), so Check is exact and
// repeatable.
func Check(m costmodel.Model) error {
	c := &checker{m: m}
	c.empty()
	c.shape("one decode at context 0", costmodel.Batch{Decode: []int{0}})
	c.shape("one 1-token chunk", costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: 1}}})
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < shapes && len(c.errs) < maxProblems; i++ {
		c.shape(fmt.Sprintf("seeded shape %d", i), randomBatch(rng))
	}
	return errors.Join(c.errs...)
}

// checker accumulates the violations of one model.
type checker struct {
	m    costmodel.Model
	errs []error
}

func (c *checker) fail(format string, args ...any) {
	if len(c.errs) < maxProblems {
		c.errs = append(c.errs, fmt.Errorf("costmodeltest: "+format, args...))
	}
}

// price calls StepTime, turning a panic into a violation (ok false).
func (c *checker) price(what string, b costmodel.Batch) (d time.Duration, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.fail("StepTime panicked on %s %s: %v", what, describe(b), r)
			ok = false
		}
	}()
	return c.m.StepTime(b), true
}

func (c *checker) empty() {
	for _, b := range []costmodel.Batch{{}, {Prefill: []costmodel.Chunk{}, Decode: []int{}}} {
		if d, ok := c.price("the empty batch", b); ok && d != 0 {
			c.fail("the empty batch %s costs %v, want 0", describe(b), d)
		}
	}
}

// shape checks one non-empty batch: positive, deterministic, unmodified,
// and monotone under every way of adding work.
func (c *checker) shape(what string, b costmodel.Batch) {
	orig := clone(b)
	d, ok := c.price(what, b)
	if !ok {
		return
	}
	if d <= 0 {
		c.fail("%s %s costs %v, want > 0", what, describe(b), d)
	}
	if !equal(b, orig) {
		c.fail("StepTime modified %s: %s became %s", what, describe(orig), describe(b))
		return
	}
	c.price("a neighbour", costmodel.Batch{Decode: []int{1 << 20}})
	if again, ok := c.price(what, b); ok && again != d {
		c.fail("%s %s costs %v, then %v: not deterministic", what, describe(b), d, again)
	}
	if b.Verify == nil && len(b.Decode) > 0 {
		same := clone(b)
		same.Verify = ones(len(b.Decode))
		if v, ok := c.price("Verify of all ones", same); ok && v != d {
			c.fail("%s %s costs %v, but %v with every decode verifying 1 position (Verify all ones)", what, describe(b), d, v)
		}
	}
	for _, g := range growths(b) {
		if bigger, ok := c.price(g.what, g.batch); ok && bigger < d {
			c.fail("%s lowered the cost of %s from %v to %v", g.what, describe(b), d, bigger)
		}
	}
}
