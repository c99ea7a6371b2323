package chart

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the series, chosen to stay apart for colour-blind readers
// (Okabe–Ito).
var (
	blue      = color.RGBA{0, 114, 178, 255}
	orange    = color.RGBA{230, 159, 0, 255}
	green     = color.RGBA{0, 158, 115, 255}
	vermilion = color.RGBA{213, 94, 0, 255}
	purple    = color.RGBA{204, 121, 167, 255}
	grey      = color.RGBA{120, 120, 120, 255}
)

// fade is c at the given opacity (0–255), for shaded bands.
func fade(c color.RGBA, alpha uint8) color.NRGBA {
	return color.NRGBA{c.R, c.G, c.B, alpha}
}

var (
	dashed   = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted   = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	dashDot  = []vg.Length{vg.Points(10), vg.Points(4), vg.Points(2), vg.Points(4)}
	longDash = []vg.Length{vg.Points(12), vg.Points(3), vg.Points(3), vg.Points(3), vg.Points(3), vg.Points(3)}
)

// style is how one series of a chart that compares several is drawn:
// colour, glyph and dash pattern all differ from the series before it, so
// that series lying on each other, or printed without colour, stay apart.
type style struct {
	color  color.RGBA
	glyph  draw.GlyphDrawer
	dashes []vg.Length
}

// seriesDashes are the series' dash patterns in order.
var seriesDashes = [][]vg.Length{nil, dashed, dotted, dashDot, longDash}

// seriesStyle is series i's style: past the fifth, the colours and glyphs
// come round again, with the dash patterns shifted one along, so that no
// two of the first 25 series share all three.
func seriesStyle(i int) style {
	return style{
		color:  palette[i%len(palette)],
		glyph:  glyphs[i%len(glyphs)],
		dashes: seriesDashes[(i+i/len(palette))%len(seriesDashes)],
	}
}

// line is a polyline in colour c, width w and dash pattern d.
func line(xys plotter.XYs, c color.Color, w float64, d []vg.Length) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(w), d
	return l, nil
}

// linePoints is a polyline with a glyph at every point.
func linePoints(xys plotter.XYs, c color.Color, w float64, d []vg.Length, glyph draw.GlyphDrawer, r float64) (*plotter.Line, *plotter.Scatter, error) {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(w), d
	s.Color, s.Shape, s.Radius = c, glyph, vg.Points(r)
	return l, s, nil
}

// vline is a vertical line at x from y0 to y1.
func vline(x, y0, y1 float64, c color.Color, d []vg.Length) (*plotter.Line, error) {
	return line(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}}, c, 1.5, d)
}

// hline is a horizontal line at y from x0 to x1.
func hline(y, x0, x1 float64, c color.Color, d []vg.Length) (*plotter.Line, error) {
	return line(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}}, c, 1.2, d)
}

// rect is a filled rectangle without an outline.
func rect(x0, x1, y0, y1 float64, fill color.Color) (*plotter.Polygon, error) {
	p, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, err
	}
	p.Color, p.LineStyle.Width = fill, 0
	return p, nil
}

// finite reports whether every x is a finite number.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled minor ticks in between.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// linearTicks labels a linear axis every 1, 2 or 5 times a power of ten,
// about six labels over the range, with a minor tick between labels.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / 6
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*step >= raw {
			step *= m
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for k := math.Ceil(lo / step * 2); k/2*step <= hi+step*1e-9; k++ {
		t := plot.Tick{Value: k / 2 * step}
		if int(k)%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// titleGap is the space between a chart's title and its legend strip
// (or its data, without a legend).
var titleGap = vg.Points(4)

// legendGap is the space between the legend strip and the data area.
var legendGap = vg.Points(6)

// newPlot is a plot with a title, axis labels, a grid and the legend in
// the top left corner (placeLegend moves it above the data once every
// entry is in).
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = titleGap
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = 0, 0
	p.Legend.TextStyle.Font.Size = vg.Points(8.5)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{225}, color.Gray{225}
	p.Add(g)
	return p
}

func rate(x float64) string { return fmt.Sprintf("%.3g req/s", x) }

// placeLegend moves p's legend out of the data area, into a strip between
// the title and the data sized for the entries it holds now, so that the
// axes can fit the data and no mark runs under the legend. Entries added
// later overflow the strip downwards.
func placeLegend(p *plot.Plot) {
	h := legendHeight(p)
	if h == 0 {
		p.Title.Padding, p.Legend.YOffs = titleGap, 0
		return
	}
	p.Title.Padding = titleGap + h + legendGap
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = h + legendGap
}

// legendHeight is the height of p's legend (0 without entries).
func legendHeight(p *plot.Plot) vg.Length {
	r := p.Legend.Rectangle(draw.Canvas{})
	return r.Max.Y - r.Min.Y
}

// legendWidth is the width of p's widest legend entry, thumbnail
// included.
func legendWidth(p *plot.Plot) vg.Length {
	r := p.Legend.Rectangle(draw.Canvas{})
	return r.Max.X - r.Min.X
}

// strip is the height a chart's legend strip adds above its data (0 for
// a plot this package did not place a legend in).
func strip(p *plot.Plot) vg.Length {
	return max(0, p.Title.Padding-titleGap)
}

// fitTop is the top of a linear axis whose highest mark is hi: a small
// margin above it, so that the axis ends near the data.
func fitTop(hi float64) float64 { return 1.06 * hi }
