package fsum

import (
	"embed"

	"github.com/servesim/servesim/internal/revision"
)

// analysisFiles are this package's sources that turn values into
// figures: the sums behind every mean and deviation of a summary.
//
//go:embed fsum.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/internal/fsum", analysisFiles, "fsum.go")
