// Package golden compares a test's output with a file under testdata and
// rewrites the file when the test binary runs with -update, so that every
// golden-file test in servesim reads the same:
//
//	golden.Check(t, "testdata/atlas.golden", out.Bytes())
//
// and `go test ./examples/capacity -update` accepts a deliberate change.
//
// Reading guide: golden.go holds Compare (pure: an error that says which
// file differs) and Check (Compare inside a test, with the -update flag).
package golden
