package sim

import (
	"embed"

	"github.com/servesim/servesim/internal/revision"
)

// analysisFiles are sim's sources that turn a run's records into its
// Summary (summary.go, summarize.go, window.go, warmup.go, sample.go),
// registered with the analysis revision
// (analysis.AnalysisRevision). What a run simulates (the engine, the
// runner's events) is not analysis: the build's VCS revision covers it.
//
//go:embed summary.go summarize.go window.go warmup.go sample.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/sim", analysisFiles,
	"summary.go", "summarize.go", "window.go", "warmup.go", "sample.go")
