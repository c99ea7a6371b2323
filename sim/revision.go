package sim

import (
	"embed"
	"sync"

	"github.com/servesim/servesim/internal/revision"
)

// analysisFiles are sim's sources that turn runs into figures and
// verdicts: a run's records into its Summary (summary.go, summarize.go,
// window.go, warmup.go, sample.go) and summaries into curves, knees,
// bands, dial comparisons and verdicts (curve.go, classcurve.go, band.go,
// dial.go, experiment.go). What a run simulates (the engine, the runner's
// events) is not analysis: the build's VCS revision covers it.
//
//go:embed summary.go summarize.go window.go warmup.go sample.go curve.go classcurve.go band.go dial.go experiment.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/sim", analysisFiles,
	"summary.go", "summarize.go", "window.go", "warmup.go", "sample.go",
	"curve.go", "classcurve.go", "band.go", "dial.go", "experiment.go")

var analysisRevision = sync.OnceValue(revision.Hash)

// AnalysisRevision names the analysis this build computes figures and
// verdicts with: a SHA-256 over the sources that compute them, embedded
// in the binary (internal/revision.Files lists them, each named by its
// package path and file name), cut to 16 hex digits:
// "servesim-analysis/sha256:…". Any change to those files, a comment
// included, changes it, so two cards with the same revision were analysed
// by the same code; nothing is typed by hand. A benchmark card records
// it, and loading a card analysed under another revision is an error
// unless overridden.
func AnalysisRevision() string { return analysisRevision() }
