// Package nextinto is an internal route from package workload's built-in
// sources to the simulator's runner: a source writes its next request into
// the runner's slot in place, instead of returning it by value
// (workload.Source.Next), which copied and zeroed the 112-byte request
// several times on its way to the runner.
//
// Package workload sets Of at init; package sim asks it once, at a run's
// setup. A source it knows nothing of (a user's Source) has no route:
// the runner calls its Next, the route's twin, which for a built-in source
// yields the same request.
package nextinto

// Of is the source's in-place Next, a value with the method
// NextInto(*workload.Request) error (of a type workload does not
// export), if src is one of workload's sources that has one; else nil.
// (It is any because this package cannot import workload, which
// imports it.)
var Of = func(src any) any { return nil }
