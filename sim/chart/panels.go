package chart

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Panels are plots drawn one above the other on one page, of equal
// height, their data areas aligned so that a shared x axis reads
// straight down. Write and Save draw them like a single plot (on a taller
// page by default); each panel can be retitled or added to first.
type Panels []*plot.Plot

// Draw draws the panels on c, the first on top.
func (ps Panels) Draw(c draw.Canvas) {
	if len(ps) == 0 {
		return
	}
	rows := make([][]*plot.Plot, len(ps))
	for i, p := range ps {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(ps), Cols: 1, PadY: vg.Points(10), PadTop: vg.Points(2), PadBottom: vg.Points(2),
		PadLeft: vg.Points(2), PadRight: vg.Points(6)}
	for i, tc := range plot.Align(rows, tiles, c) {
		ps[i].Draw(tc[0])
	}
}
