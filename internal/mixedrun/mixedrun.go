// Package mixedrun is the path between the engine and sim for moves
// whose first step lasts longer or shorter than the rest (engine's
// mixed.go, sim's accountFirst): a mixed step, a prompt's whole prefill
// beside the running decodes, planned with the decode run after it as
// one move. The exported API carries a move's steps as equal
// (Plan.StepTime, Outcome.End − Steps × StepTime), so the engine plans
// such a move only for a driver that asked (Allow), and tells it which
// outcome covers such a first step, and the blocks held during it
// (Out). The engine sets the two functions in its init; only sim calls
// them. A leaf.
package mixedrun

import "time"

// Allow lets eng (an *engine.Engine) plan a mixed step and the decode
// run after it as one move, or stops it. Such a move's Plan has the
// later steps' StepTime and batch (its admitted prompt a decode), and
// its End is its first step's StepTime + extra later than Start +
// Steps × StepTime. The driver promises to read each outcome's first
// step (Out: the outcome that covers it starts at the Plan's Start), and
// to read nothing of the engine inside such a move (Outstanding counts
// the admitted prompt as decoding from its last prompt token).
var Allow func(eng any, on bool)

// Out is where eng (an *engine.Engine) says whether the outcome it last
// returned covers a mixed move's first step (on, which the driver sets
// back to false once read) and the blocks held during that step
// (blocks, of the outcome's BlockSteps). That step's batch had one
// prefill chunk and one decode fewer than the later steps
// (Outcome.Decodes and Chunks count theirs).
var Out func(eng any) (on *bool, blocks *int)

// Least returns, for engs (a []*engine.Engine, converted here once), the
// function whose answer at instant t is the index of the engine that
// holds the fewest outstanding tokens at t, ties to the lowest index:
// LeastLoaded's choice, as Outstanding reads each engine, but inside a
// mixed move as the step-by-step engine counts them (the mixed step's
// prompt chunk outstanding until that step ends, its first token and
// the later steps' tokens out as each ends), where Outstanding counts
// the prompt as decoding from the plan on. A driver that asks a fleet's
// engines for mixed moves and routes by their load reads it so, at
// every arrival, without engs converted from any at each call.
var Least func(engs any) func(t time.Duration) int
