package engine

import (
	"time"

	"github.com/servesim/servesim/internal/mixedrun"
)

// Mixed moves: a step that prefills an admitted prompt whole beside the
// running decodes (a mixed step) planned with the decode run after it as
// one move, for a driver that asked (internal/mixedrun). The move's first
// step lasts plan.StepTime + lead, each later one plan.StepTime; every
// place that counts a move's steps from its start reads lead (started,
// completeUntil, truncate), 0 for a move of equal steps.

func init() {
	mixedrun.Allow = func(x any, on bool) { x.(*Engine).mixOK = on }
	mixedrun.Out = func(x any) (*bool, *int) { e := x.(*Engine); return &e.firstOn, &e.firstBlocks }
}

// lead is how much longer than StepTime the first step of the move in
// flight lasts: a mixed move's until that step is collected (its End
// holds it), else 0.
func (e *Engine) lead() time.Duration {
	if !e.mixed {
		return 0
	}
	p := &e.plan
	return p.End - p.Start - time.Duration(p.Steps)*p.StepTime
}

// collectFirst notes, as the steps of a mixed move that include its first
// are collected (Complete, CompleteUntil), that the outcome covers it and
// the blocks held during it, for the driver (firstOn; firstBlocks, set to
// the blocks held once the move was planned, all of its first step's:
// unless an Abort inside that step released some, then
// runBlockSteps(1)). Called before the outcome's blocks move.
func (e *Engine) collectFirst() {
	e.firstOn = true
	if e.firstBlocks < 0 { // an abort inside the first step released a member's blocks
		e.firstBlocks = e.runBlockSteps(1)
	}
}

// listFirst lists the admitted prompt of the mixed move whose first j
// steps are being collected, a member of the cohort that joined last
// (the list keeps its order) and the only one that never emitted (a
// member's emitted is its count at its join), unless an Abort took it:
// its first token and the next j − 1 (completeCohort, called next, counts
// it among the members that continue their streak), and the prompt token
// seq.left counted it for as it decoded from its prompt's last. The
// move's later steps are equal (lead is 0).
func (e *Engine) listFirst(j int) {
	if m := e.co.members; len(m) > 0 {
		if s := m[len(m)-1]; s != nil && s.emitted == 0 {
			e.outstanding--
			e.out.Streak--
			s.lastMove = e.move
			e.out.Emitted = append(e.out.Emitted, Emit{Ref: s.req.Ref, Tokens: j, First: true})
		}
	}
	e.mixed = false
}
