// Package runthrough is the path between the engine and sim for runs of
// decode steps that go on through their members' finishes (engine's
// continue.go, sim's streak.go), which the exported API does not carry: a
// driver that accounts such a run must take each finisher at its own
// step's end, so the engine needs the driver's leave to plan one, and the
// driver the instant of the run's first finish inside it. The engine sets
// the two functions in its init; only sim calls them. A leaf.
package runthrough

import "time"

// Allow lets eng (an *engine.Engine) plan continued runs that go on
// through finishes, or stops it. The driver promises to collect each
// such run (CompleteUntil) before it handles anything at an instant
// after a finish inside it (FinAt), and to read nothing of the engine
// inside it (FreeBlocks, Outstanding), which counts the finishers as
// still decoding until they are collected.
var Allow func(eng any, on bool)

// FinAt is where eng (an *engine.Engine) keeps the instant of the first
// finish inside its move in flight, before the move's end: the end of
// the step that emits a member's last token while the run goes on past
// it. It holds 0 when there is none.
var FinAt func(eng any) *time.Duration
