// Package enginetest holds a driver of package engine to the engine's
// basic contract, as rafttest does for raft and fstest for file systems:
// a second driver (a disaggregated pool, someone else's simulator) wraps
// its engine in a Checker under its tests, and the engine's own scripted
// tests replay through it.
//
// The basic contract (engine/doc.go, "The basic contract") is New, Add,
// Schedule, Complete, Abort, the read-only queries and Scheduled: every
// move is one step, every emit is in its Outcome and every request the
// step schedules is named by Engine.Scheduled. The batched contract
// (engine.Runner: runs of several steps, omitted streaks) has its own
// checks, engine.Runner.SetStrict.
//
// Reading guide:
//   - checker.go: Checker, which drives an engine through Add, Schedule,
//     Complete and Abort and checks after every call the laws named by
//     the Law constants: Engine.Check clean; every accepted request ends
//     exactly once (its last token, or an accepted Abort), and the engine
//     holds exactly those that have not; KV blocks used + free = total;
//     Scheduled names each request of the step once, its tokens summing
//     to the plan's, new ones exactly those in Plan.Started; emits only
//     for scheduled requests, First on the first token only, Done after
//     exactly Output tokens (cut at MaxModelLen: Config.ServedOutput);
//     every move one step; Remote requests and loads from a tier
//     (LawRemote, LawTier) reserved, landed and scheduled in that order.
//     Err returns the first
//     law broken, a *Violation naming the law and the call.
//   - script.go: RunScript, the scripted interactions of
//     engine/testdata/*.txt (config, add, abort, step), replayed through
//     a Checker and printed a line a step, for golden files.
//
// Use it from a test:
//
//	c := enginetest.NewChecker(e)
//	// … drive c.Add, c.Schedule, c.Complete, c.Abort as the engine …
//	if err := c.Finish(); err != nil {
//		t.Fatal(err)
//	}
package enginetest
