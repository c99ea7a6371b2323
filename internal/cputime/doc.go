// Package cputime reads the CPU time the process has used (user + system,
// every thread): what a run costs, however busy the machine is. The
// benchmarks report simulated requests per CPU-second from it, and
// examples/scale prints it.
//
// Reading guide: cputime_unix.go reads getrusage(2); cputime_other.go
// returns 0 where that is not available (a rate over it is then +Inf or
// left out).
package cputime
