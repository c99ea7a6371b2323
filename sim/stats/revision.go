package stats

import (
	"embed"

	"github.com/servesim/servesim/internal/revision"
)

// analysisFiles are the sources of this package that turn values into
// figures: a Dist and its percentiles, intervals and the warm-up rule.
//
//go:embed dist.go quantile.go interval.go mser.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/sim/stats", analysisFiles,
	"dist.go", "quantile.go", "interval.go", "mser.go")
