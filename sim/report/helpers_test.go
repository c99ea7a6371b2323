package report

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// checkGolden compares got with testdata/name, rewriting it under -update.
// The analysis revision, a hash of sim's analysis sources, is written as
// a placeholder: a change there must not move the card's goldens.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = bytes.ReplaceAll(got, []byte(analysis.AnalysisRevision()), []byte("servesim-analysis/(this build's)"))
	golden.Check(t, filepath.Join("testdata", name), got)
}

// slice is a workload.Source over fixed requests.
type slice []workload.Request

func (s *slice) Next() (workload.Request, error) {
	if len(*s) == 0 {
		return workload.Request{}, io.EOF
	}
	r := (*s)[0]
	*s = (*s)[1:]
	return r, nil
}

// fixture is a small run that ends in every status but unfinished: ok
// requests (one in the warm-up, so unmeasured), one rejected (its prompt
// exceeds the KV capacity), one errored (recorded failed), one timed out,
// and a class that needs quoting in CSV.
func fixture() *slice {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return &slice{
		{ID: 0, Arrival: 0, InputTokens: 2000, OutputTokens: 4},
		{ID: 1, Arrival: ms(100), InputTokens: 2000, OutputTokens: 4, Class: `tenant "a", gold`},
		{ID: 2, Arrival: ms(150), InputTokens: 500000, OutputTokens: 4},
		{ID: 3, Arrival: ms(200), InputTokens: 1000, OutputTokens: 3, Failed: true},
		{ID: 4, Arrival: ms(250), InputTokens: 3000, OutputTokens: 60, Conversation: 7, Turn: 1},
		{ID: 5, Arrival: ms(300), InputTokens: 100, OutputTokens: 1},
		{ID: 6, Arrival: ms(400), InputTokens: 2000, OutputTokens: 6},
	}
}

// fixtureConfig measures from 50 ms on and abandons requests after 2 s.
func fixtureConfig(keep bool) sim.Config {
	return sim.Config{Window: sim.Window{Warmup: 50 * time.Millisecond}, Timeout: 2 * time.Second, KeepTokens: keep}
}

// runFixture runs the fixture, handing every record to obs.
func runFixture(t *testing.T, keep bool, obs sim.Observer) sim.Summary {
	t.Helper()
	s, err := sim.Run(fixtureConfig(keep), fixture(), obs)
	require.NoError(t, err)
	return s
}

// smallSweep is a short Atlas sweep: three loads, two replications, a
// 60-second window after a 10-second warm-up.
func smallSweep() analysis.Sweep {
	return analysis.Sweep{
		Config: sim.Config{Window: sim.Window{Warmup: 10 * time.Second, Horizon: 70 * time.Second}},
		Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*100)+10, workload.Fixed(2000, 200))
		}),
		Grid:     analysis.Grid{Loads: []float64{1, 2.5, 4}},
		Reps:     2,
		BaseSeed: 7,
	}
}

func smallCurve(t *testing.T) *analysis.Curve {
	t.Helper()
	c, err := smallSweep().Run()
	require.NoError(t, err)
	return c
}
