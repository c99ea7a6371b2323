package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// atlasSweep is the Atlas TP4 sweep of the sim package's tests.
func atlasSweep() analysis.Sweep {
	return analysis.Sweep{
		Config: sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*700)+10, workload.Fixed(2000, 200))
		}),
		Grid: analysis.Grid{Start: 0.5},
		Reps: 4,
	}
}

func atlasCurve(t *testing.T) *analysis.Curve {
	t.Helper()
	c, err := atlasSweep().Run()
	require.NoError(t, err)
	return c
}

// charts are the three charts of the Atlas curve and of its run nearest
// the operating point.
func charts(t *testing.T) map[string]*plot.Plot {
	c := atlasCurve(t)
	g, err := Goodput(c, 1.5)
	require.NoError(t, err)
	l, err := Latency(c)
	require.NoError(t, err)
	cdf, err := CDF(&c.Points[1].Runs[0])
	require.NoError(t, err)
	return map[string]*plot.Plot{"goodput": g, "latency": l, "cdf": cdf}
}

func TestChartsRenderAsValidSVGAndPNG(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("SERVESIM_CHART_DIR"); d != "" {
		dir = d // keep the images to look at them
	}
	for name, p := range charts(t) {
		for _, format := range []string{SVG, PNG} {
			path := filepath.Join(dir, name+"."+format)
			require.NoError(t, Save(path, p), path)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NotEmpty(t, b, path)
			if format == PNG {
				img, err := png.Decode(bytes.NewReader(b))
				require.NoError(t, err, path)
				assert.Equal(t, 1063, img.Bounds().Dx(), "18 cm at 150 dpi")
				continue
			}
			s := string(b)
			assert.True(t, strings.HasPrefix(s, "<?xml") || strings.HasPrefix(s, "<svg"), path)
			assert.Contains(t, s, "</svg>")
		}
	}
}

// The goodput chart names its marks with the curve's own figures.
func TestGoodputChartNamesItsMarks(t *testing.T) {
	c := atlasCurve(t)
	p, err := Goodput(c, 1.5)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, SVG, p))
	svg := buf.String()
	for _, want := range []string{
		"knee " + rate(c.Knee.Load.Center), "peak " + rate(c.Peak.Goodput.Center),
		"collapse from " + rate(c.Collapse.Load), "operating point 1.5 req/s", "transport: goodput = offered",
	} {
		assert.Contains(t, svg, want)
	}
}

func TestChartsRefuseEmptyInputs(t *testing.T) {
	_, err := Goodput(&analysis.Curve{}, 0)
	assert.Error(t, err)
	_, err = Latency(&analysis.Curve{})
	assert.Error(t, err)
	_, err = CDF(&sim.Summary{})
	assert.Error(t, err)
	var buf bytes.Buffer
	assert.Error(t, Write(&buf, "pdf", plot.New()))
	assert.Error(t, Save(filepath.Join(t.TempDir(), "x.gif"), plot.New()))
}

// A curve with one replication (no intervals) and no knee in range draws
// without the marks it lacks.
func TestChartsOfACurveWithoutIntervalsOrKnee(t *testing.T) {
	sw := atlasSweep()
	sw.Config.Window = sim.Window{Warmup: 10 * time.Second, Horizon: 70 * time.Second}
	sw.Grid, sw.Reps = analysis.Grid{Loads: []float64{0.25, 0.5}}, 1
	c, err := sw.Run()
	require.NoError(t, err)
	require.False(t, c.Knee.Found)
	g, err := Goodput(c, 0.4)
	require.NoError(t, err)
	l, err := Latency(c)
	require.NoError(t, err)
	for _, p := range []*plot.Plot{g, l} {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, PNG, p))
		_, err := png.Decode(&buf)
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, SVG, g))
	assert.NotContains(t, buf.String(), ">knee ")
	assert.Contains(t, buf.String(), "no knee inside the sweep")
	assert.Contains(t, buf.String(), "no intervals: one replication")
}

// Issue 8, bug 3: a load whose windows measured no request has no goodput
// or latency to draw. The charts leave it out and say so in the legend,
// instead of drawing a goodput of 0 there, and a curve where no load
// measured anything still draws (no panic on an empty log axis).
func TestChartsOfLoadsThatMeasuredNothing(t *testing.T) {
	sw := atlasSweep()
	sw.Config.Window = sim.Window{Warmup: 10 * time.Second, Horizon: 70 * time.Second}
	sw.Grid, sw.Reps = analysis.Grid{Loads: []float64{0.0001, 1}}, 2
	c, err := sw.Run()
	require.NoError(t, err)
	require.True(t, c.Points[0].NoMeasured())
	require.Len(t, measured(c), 1)
	assert.Equal(t, 1.0, measured(c)[0].Load)
	g, err := Goodput(c, 0)
	require.NoError(t, err)
	assert.Contains(t, svgOf(t, g), "no measured requests at 0.0001 req/s: no goodput drawn there")

	sw.Grid.Loads = []float64{0.0001}
	c, err = sw.Run()
	require.NoError(t, err)
	g, err = Goodput(c, 0.5)
	require.NoError(t, err)
	assert.Greater(t, g.Y.Max, g.Y.Min, "a y range above 0")
	svg := svgOf(t, g)
	assert.Contains(t, svg, "no measured requests at any load: no goodput to draw")
	assert.NotContains(t, svg, "peak ")
	for _, slo := range []sim.SLO{{}, {TTFT: sim.Unbounded, ITL: sim.Unbounded}} {
		c.SLO = slo.WithDefaults()
		l, err := Latency(c)
		require.NoError(t, err)
		assert.Contains(t, svgOf(t, l), "no measured requests at any load: no latencies to draw")
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, PNG, l))
	}
}

// A load whose runs stopped on their backlog bound before measuring
// anything is past the knee: its goodput of 0 is drawn, not left out.
func TestOverloadedLoadsKeepTheirGoodput(t *testing.T) {
	est := func(x float64) stats.Interval { return stats.Interval{Center: x, Lo: math.NaN(), Hi: math.NaN()} }
	c := &analysis.Curve{Target: 0.95, Points: []analysis.Point{
		{Load: 1, Runs: []sim.Summary{{Offered: 10}}, Goodput: est(1), Throughput: est(1)},
		{Load: 1000, Runs: []sim.Summary{{Overloaded: true}}, Goodput: est(0), Throughput: est(3)},
		{Load: 0.0001, Runs: []sim.Summary{{}}, Goodput: est(0), Throughput: est(0)},
	}}
	var loads []float64
	for _, p := range measured(c) {
		loads = append(loads, p.Load)
	}
	assert.Equal(t, []float64{1, 1000}, loads)
	g, err := Goodput(c, 0)
	require.NoError(t, err)
	svg := svgOf(t, g)
	assert.Contains(t, svg, "no measured requests at 0.0001 req/s")
	assert.NotContains(t, svg, "at 1e+03 req/s")
}

func svgOf(t *testing.T, p *plot.Plot) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, SVG, p))
	return buf.String()
}
