package analysis

import (
	"embed"
	"sync"

	"github.com/servesim/servesim/internal/revision"

	// The packages whose analysis sources the revision hashes register
	// them when they initialise; this package imports both.
	_ "github.com/servesim/servesim/sim"
	_ "github.com/servesim/servesim/sim/stats"
)

// analysisFiles are this package's sources that turn summaries into
// curves, knees, bands, dial comparisons, fleet sizes and verdicts.
//
//go:embed curve.go classcurve.go band.go dial.go experiment.go sizing.go retained.go day.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/sim/analysis", analysisFiles,
	"curve.go", "classcurve.go", "band.go", "dial.go", "experiment.go", "sizing.go", "retained.go", "day.go")

var analysisRevision = sync.OnceValue(revision.Hash)

// AnalysisRevision names the analysis this build computes figures and
// verdicts with: a SHA-256 over the sources that compute them, embedded
// in the binary and cut to 16 hex digits: "servesim-analysis/sha256:…".
// The sources are those of sim (summary.go, window.go, sample.go,
// pools_summary.go, tiers_summary.go, scale_summary.go: records into a Summary), of sim/stats (dist.go, quantile.go,
// interval.go, mser.go: values into figures and intervals) and of this
// package (curve.go, classcurve.go, band.go, dial.go, experiment.go,
// sizing.go, retained.go, day.go: summaries into curves, sizes, days
// and verdicts), read in the order
// of their full names (package path "/" file name), each as that name,
// its length and its bytes (internal/revision). Any change to those
// files, a comment included, changes it, so two cards with the same
// revision were analysed by the same code; nothing is typed by hand. A
// benchmark card records it, and loading a card analysed under another
// revision is an error unless overridden.
func AnalysisRevision() string { return analysisRevision() }
