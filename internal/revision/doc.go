// Package revision derives the analysis revision from the sources that
// turn runs into figures and verdicts. Those sources live in four
// packages (sim, sim/stats, sim/analysis and internal/fsum, the sums
// behind every mean), and a //go:embed reaches
// only its own package's directory: each of them embeds its own analysis
// files and registers them here from a package-level variable's
// initialiser, and analysis.AnalysisRevision hashes what was registered.
//
// Reading guide: revision.go holds Register, Files and Hash.
package revision
