package sim

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"sync"
)

// analysisFiles are the sources that turn runs into figures and verdicts:
// a run's records into its Summary (summary.go, summarize.go, window.go,
// warmup.go, quantile.go) and summaries into curves, knees, intervals,
// bands, dial comparisons and verdicts (interval.go, curve.go,
// classcurve.go, band.go, dial.go, experiment.go). What a run simulates
// (the engine, the runner's events) is not analysis: the build's VCS
// revision covers it.
//
//go:embed summary.go summarize.go window.go warmup.go quantile.go interval.go curve.go classcurve.go band.go dial.go experiment.go
var analysisFiles embed.FS

var analysisNames = []string{"summary.go", "summarize.go", "window.go", "warmup.go", "quantile.go",
	"interval.go", "curve.go", "classcurve.go", "band.go", "dial.go", "experiment.go"}

var analysisRevision = sync.OnceValue(func() string {
	h := sha256.New()
	for _, name := range analysisNames {
		b, err := analysisFiles.ReadFile(name)
		if err != nil {
			panic("sim: invariant analysis-sources-embedded broken: " + err.Error())
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return "servesim-analysis/sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
})

// AnalysisRevision names the analysis this build computes figures and
// verdicts with: a SHA-256 over the sources that compute them, embedded
// in the binary (summary.go, summarize.go, window.go, warmup.go,
// quantile.go, interval.go, curve.go, classcurve.go, band.go, dial.go
// and experiment.go, in that order, each as its name, its length and its
// bytes), cut to 16 hex digits: "servesim-analysis/sha256:…". Any change
// to those files, a comment included, changes it, so two cards with the
// same revision were analysed by the same code; nothing is typed by hand.
// A benchmark card records it, and loading a card analysed under another
// revision is an error unless overridden.
func AnalysisRevision() string { return analysisRevision() }
