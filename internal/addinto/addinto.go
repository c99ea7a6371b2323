// Package addinto is an internal route from sim's runner into the
// engine's Add: the runner writes each request it sends into the
// engine's own record of it, in place, instead of building an
// engine.Request that Engine.Add takes by value and copies (96 bytes a
// request, built on the stack and copied into the engine's record).
//
// Package engine sets Next and Commit at init; package sim reads them
// once, at its init, and takes the route for a single replica. Engine.Add,
// the exported path, is the route's twin: Commit takes only a request Add
// would add as its common case, and hands any other to Add itself. A
// leaf.
package addinto

// Next is a func(*engine.Engine) *engine.Request: the engine's record of
// the request the next Commit adds, zero. (Both are any because this
// package cannot import engine, which imports it.)
var Next any

// Commit is a func(*engine.Engine, time.Duration) (*engine.Request,
// error): Engine.Add(now, the request written into the record Next or
// the Commit before returned), with nothing of the engine's called
// between; it returns the record of the next request, zero.
var Commit any

// CommitRemote is Commit for a Remote request (a decode replica's, which
// its prefill replica handed over), of the same type: Commit would hand
// it to Add, which copies it.
var CommitRemote any
