// Package apicheck holds servesim's exported API to a recorded baseline,
// so that the tools that import servesim keep building: its test loads
// every public package, compares it with golang.org/x/exp/apidiff to the
// export data recorded in testdata/ (written by golang.org/x/tools'
// gcexportdata), and fails on an incompatible change (a removed or
// changed name, a method added to an interface users implement, a field
// a composite literal without names would miss). Compatible changes are
// listed, not refused.
//
// After a deliberate incompatible change, record the new API and say why
// in the commit:
//
//	go test ./internal/apicheck -update
//
// It rewrites only the baselines of packages whose API differs from the
// recorded one (or that have none): export data also holds source
// positions, which every edit moves.
//
// Reading guide: apicheck.go is Diff, apidiff's report split into the
// incompatible and the compatible changes; apicheck_test.go is the check
// and the recorder.
package apicheck
