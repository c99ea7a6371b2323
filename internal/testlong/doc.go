// Package testlong gates servesim's long tests — the full-strength
// property runs, the scale cases, the instruction budgets under valgrind,
// the studies run at their defaults — behind the environment variable
// SERVESIM_LONG, so that the README's `go test ./...` stays well under a
// minute on two cores while `SERVESIM_LONG=1 go test ./...` (what .ci/run
// also runs) keeps every case at its full size:
//
//	func TestBig(t *testing.T) {
//		testlong.Skip(t, "10⁶-value samples") // skips unless SERVESIM_LONG=1
//		…
//	}
//
//	cases := testlong.Int(t, 1_000, 10_000) // a cheaper default, the full size when long
//
// SERVESIM_LONG takes 1/true (long) or ""/0/false (not); any other value
// fails the test that asks, naming the variable, rather than guess. It is
// independent of -short, which skips more still (the tests that already
// honoured it keep doing so).
//
// A test that never asks runs the same long or not. With
// SERVESIM_LONG_LOG naming a file, each test that asks is written to it
// (its package's directory and its top-level name), so that .ci/run,
// having run the quick suite so, runs long only those tests rather than
// their packages' every test a second time.
//
// Reading guide: testlong.go is the whole package.
package testlong
