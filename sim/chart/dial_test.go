package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
	"gonum.org/v1/plot"
)

// chartDir is where a test writes its images: a temporary directory, or
// SERVESIM_CHART_DIR to look at them.
func chartDir(t *testing.T) string {
	if d := os.Getenv("SERVESIM_CHART_DIR"); d != "" {
		return d
	}
	return t.TempDir()
}

// checkImages saves d as PNG and SVG and checks each is a non-empty image
// of the page's size (height in pixels for the PNG).
func checkImages(t *testing.T, name string, d Drawing, height int) {
	t.Helper()
	dir := chartDir(t)
	for _, format := range []string{PNG, SVG} {
		path := filepath.Join(dir, name+"."+format)
		require.NoError(t, Save(path, d), path)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotEmpty(t, b)
		if format == PNG {
			img, err := png.Decode(bytes.NewReader(b))
			require.NoError(t, err)
			assert.Equal(t, 1063, img.Bounds().Dx())
			switch d := d.(type) {
			case *plot.Plot:
				assertLegendFits(t, d, name)
			case Panels:
				for _, p := range d {
					assertLegendFits(t, p, name)
				}
			}
			// The page's default height, and the legend strips above it.
			strips := 0.0
			switch d := d.(type) {
			case *plot.Plot:
				strips = float64(strip(d))
			case Panels:
				for _, p := range d {
					strips += float64(strip(p))
				}
			}
			assert.Greater(t, strips, 0.0, "a legend strip")
			assert.InDelta(t, float64(height)+strips/72*150, float64(img.Bounds().Dy()), 1)
			continue
		}
		assert.Contains(t, string(b), "</svg>")
	}
}

// A chunk-cap dial sweep on the chapter's workload: no cap (the
// baseline), 256 and 1024 tokens.
func chunkDial(t *testing.T) *analysis.DialResult {
	t.Helper()
	r, err := analysis.DialSweep{
		Sweep: analysis.Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
			Workload: analysis.Poisson(workload.Fixed(2000, 200)),
			Grid:     analysis.Grid{Loads: []float64{1.2, 1.5, 1.8, 2.1, 2.4}}, Reps: 3,
		},
		Dial: analysis.DialChunkCap, Values: []float64{0, 256, 1024}, Probe: 1,
	}.Run()
	require.NoError(t, err)
	return r
}

// The knee-against-dial chart renders, in two panels, as PNG and SVG.
func TestDialChartRenders(t *testing.T) {
	r := chunkDial(t)
	ps, err := Dial(r, []string{"none", "256", "1024"})
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, "Engine.ChunkCap (tokens)", ps[1].X.Label.Text)
	assert.Contains(t, ps[1].Title.Text, "at 1 req/s offered")
	checkImages(t, "dial", ps, 650+472)

	var svg bytes.Buffer
	require.NoError(t, Write(&svg, SVG, ps))
	for _, want := range []string{"none", "1024", "knee, interval as error bars", "TTFT p99", "ITL p99", "SLO: ITL ≤ 150 ms", "baseline&#39;s knee",
		// Issue 32: the note on Δ ran past the right edge of the page;
		// it is two lines now (checkImages holds the legend's width).
		"Δ: knee − baseline&#39;s knee, paired by replication (mean ± half its interval)",
		"Δ ≤ or ≥: a bound, a knee lay beyond the loads swept; Δ —: no replication paired",
		// TTFT p99 dotted in blue, ITL p99 dashed in orange.
		"stroke:#0072B2;stroke-width:1.2;stroke-dasharray:1.5,2.5", "stroke:#E69F00;stroke-width:1.2;stroke-dasharray:6,3"} {
		assert.Contains(t, svg.String(), want)
	}

	// Without a probe load: the knee panel alone, on the default page.
	r.Probe = nil
	ps, err = Dial(r, nil)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	checkImages(t, "dial-noprobe", ps, 650)
}

// A value whose knee lies below its sweep is marked at that bound, never
// drawn as a knee; labels must match the values.
func TestDialChartMarksCensoredKnees(t *testing.T) {
	r := chunkDial(t)
	c := *r.Curves[1]
	c.Knee = analysis.Knee{Load: stats.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, Censored: analysis.BelowLowest, FirstMiss: 1.2}
	r.Curves[1] = &c
	ps, err := Dial(r, nil)
	require.NoError(t, err)
	var svg bytes.Buffer
	require.NoError(t, Write(&svg, SVG, ps))
	assert.Contains(t, svg.String(), "knee below the lowest load swept")

	_, err = Dial(r, []string{"one"})
	assert.ErrorContains(t, err, "1 labels for 3 values")
	_, err = Dial(&analysis.DialResult{}, nil)
	assert.Error(t, err)
}

func TestDiffLabel(t *testing.T) {
	assert.Equal(t, "Δ -0.27 ± 0.03", diffLabel(stats.Interval{Center: -0.27, Lo: -0.3, Hi: -0.24, N: 4}, 0))
	assert.Equal(t, "Δ ≤ -0.27 ± 0.03", diffLabel(stats.Interval{Center: -0.27, Lo: -0.3, Hi: -0.24, N: 4}, 2))
	assert.Equal(t, "Δ —", diffLabel(stats.Interval{Center: math.NaN()}, 0))
	assert.Equal(t, "Δ ≥ +0.1", diffLabel(stats.Interval{Center: 0.1, Lo: math.NaN(), Hi: math.NaN(), N: 1}, 1))
}
