package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// drain reads every request of an open-loop source.
func drain(t testing.TB, src Source) []Request {
	t.Helper()
	var out []Request
	for {
		r, err := src.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

// gapsOf returns inter-arrival gaps in seconds, the first from instant 0.
func gapsOf(reqs []Request) []float64 {
	gaps := make([]float64, len(reqs))
	prev := time.Duration(0)
	for i, r := range reqs {
		gaps[i] = (r.Arrival - prev).Seconds()
		prev = r.Arrival
	}
	return gaps
}

func arrivalSource(t testing.TB, seed uint64, count int, a Arrival) []Request {
	g, err := NewSynthetic(Synthetic{Seed: seed, Count: count, Arrival: a, Lengths: Fixed(100, 10)})
	require.NoError(t, err)
	return drain(t, g)
}

// Gamma gaps have mean 1/rate and CV 1/√k, and their distribution passes a
// Kolmogorov–Smirnov test against Gamma(shape k, rate k·rate).
func TestGammaGapsMatchTarget(t *testing.T) {
	const n, rate = 20000, 10.0
	for _, k := range []float64{0.5, 1, 4} {
		t.Run(fmt.Sprint("k=", k), func(t *testing.T) {
			gaps := gapsOf(arrivalSource(t, 7, n, Arrival{Process: Gamma, Rate: rate, Burstiness: k}))
			mean, std := stat.MeanStdDev(gaps, nil)
			assert.InEpsilon(t, 1/rate, mean, 0.03, "mean gap")
			assert.InEpsilon(t, 1/math.Sqrt(k), std/mean, 0.03, "CV")

			target := distuv.Gamma{Alpha: k, Beta: k * rate}
			ref := make([]float64, n)
			for i := range ref {
				ref[i] = target.Quantile((float64(i) + 0.5) / n)
			}
			slices.Sort(gaps)
			d := stat.KolmogorovSmirnov(gaps, nil, ref, nil)
			assert.Less(t, d, 1.63/math.Sqrt(n), "KS distance above the 1%% critical value")
		})
	}
}

// Burstiness 1 is Poisson, draw for draw.
func TestGammaOneIsPoisson(t *testing.T) {
	p := arrivalSource(t, 3, 500, Arrival{Rate: 4})
	g := arrivalSource(t, 3, 500, Arrival{Process: Gamma, Rate: 4, Burstiness: 1})
	assert.Equal(t, p, g)
}

// Common random numbers: the same seed at 2λ gives the same requests at
// half the instants (to the nanosecond).
func TestCommonRandomNumbersAcrossRates(t *testing.T) {
	for _, a := range []Arrival{
		{Rate: 3},
		{Process: Gamma, Rate: 3, Burstiness: 0.5},
		{Process: Gamma, Rate: 3, Burstiness: 2, Normalize: true},
		{Process: Periodic, Rate: 3},
		{Ramp: Ramp{Strategy: RampExponential, StartRate: 1, EndRate: 8}},
	} {
		b := a
		b.Rate *= 2
		b.Ramp.StartRate *= 2
		b.Ramp.EndRate *= 2
		slow := arrivalSource(t, 11, 300, a)
		fast := arrivalSource(t, 11, 300, b)
		for i := range slow {
			assert.InDelta(t, slow[i].Arrival/2, fast[i].Arrival, 1, "%v request %d", a, i)
			slow[i].Arrival = fast[i].Arrival
		}
		assert.Equal(t, slow, fast, "%v: same requests apart from instants", a)
	}
}

// vLLM's normalisation: the last of N requests leaves at exactly N/rate.
func TestNormalizeEndsAtCountOverRate(t *testing.T) {
	reqs := arrivalSource(t, 5, 1000, Arrival{Process: Gamma, Rate: 8, Burstiness: 0.3, Normalize: true})
	assert.Equal(t, 125*time.Second, reqs[len(reqs)-1].Arrival)
	raw := arrivalSource(t, 5, 1000, Arrival{Process: Gamma, Rate: 8, Burstiness: 0.3})
	assert.NotEqual(t, 125*time.Second, raw[len(raw)-1].Arrival)
}

func TestPeriodicGapsAreExact(t *testing.T) {
	reqs := arrivalSource(t, 1, 4, Arrival{Process: Periodic, Rate: 4})
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second},
		[]time.Duration{reqs[0].Arrival, reqs[1].Arrival, reqs[2].Arrival, reqs[3].Arrival})
}

// vLLM's ramp-up: request i is sent at the rate reached at progress
// i/(N-1); with periodic gaps the gaps are exactly 1/rate_i.
func TestRampRates(t *testing.T) {
	lin := Ramp{Strategy: RampLinear, StartRate: 1, EndRate: 5}
	exp := Ramp{Strategy: RampExponential, StartRate: 1, EndRate: 16}
	assert.Equal(t, []float64{1, 2, 3, 4, 5}, []float64{lin.rateAt(0, 5), lin.rateAt(1, 5), lin.rateAt(2, 5), lin.rateAt(3, 5), lin.rateAt(4, 5)})
	assert.InDeltaSlice(t, []float64{1, 2, 4, 8, 16}, []float64{exp.rateAt(0, 5), exp.rateAt(1, 5), exp.rateAt(2, 5), exp.rateAt(3, 5), exp.rateAt(4, 5)}, 1e-12)
	gaps := gapsOf(arrivalSource(t, 1, 5, Arrival{Process: Periodic, Ramp: lin}))
	assert.InDeltaSlice(t, []float64{1, 0.5, 1.0 / 3, 0.25, 0.2}, gaps, 1e-9)
}

// A schedule is a time change: a periodic unit process over steps of rate
// 2 then 0 then 4 puts 2 arrivals per second in the first step, none in
// the second, 4 per second in the third.
func TestScheduleTimeChange(t *testing.T) {
	s := Schedule{Steps: []RateStep{{time.Second, 2}, {time.Second, 0}, {time.Second, 4}}}
	g, err := NewSynthetic(Synthetic{Seed: 1, Arrival: Arrival{Process: Periodic, Schedule: s}, Lengths: Fixed(1, 1)})
	require.NoError(t, err)
	var at []time.Duration
	for _, r := range drain(t, g) {
		at = append(at, r.Arrival)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{500 * ms, 1000 * ms, 2250 * ms, 2500 * ms, 2750 * ms, 3000 * ms}, at)
	assert.InDelta(t, 2.0, s.MeanRate(), 1e-12)
}

func TestDiurnalShape(t *testing.T) {
	d := Diurnal(24*time.Hour, 24, 10, 4)
	require.NoError(t, d.Validate())
	assert.InDelta(t, 10, d.MeanRate(), 1e-9)
	lo, hi := d.Steps[0].Rate, d.Steps[12].Rate
	assert.Less(t, lo, 5.0)
	assert.Greater(t, hi, 15.0)
	// A repeating diurnal Poisson workload over two days keeps its mean.
	g, err := NewSynthetic(Synthetic{Seed: 2, Duration: 48 * time.Hour, Arrival: Arrival{Schedule: d}, Lengths: Fixed(1, 1)})
	require.NoError(t, err)
	n := 0 // counted, not drained: 1.7 million requests held would cost seconds
	for {
		_, err := g.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		n++
	}
	assert.InEpsilon(t, 10*48*3600, n, 0.01)
}

func TestArrivalValidateNamesEveryField(t *testing.T) {
	err := Arrival{Process: 9, Burstiness: -1, Normalize: true}.Validate(0)
	require.Error(t, err)
	for _, want := range []string{"Arrival.Process", "Arrival.Burstiness", "Arrival.Rate", "Arrival.Normalize"} {
		assert.Contains(t, err.Error(), want)
	}
	err = Arrival{Ramp: Ramp{Strategy: RampLinear}, Schedule: Schedule{Steps: []RateStep{{0, -1}}}}.Validate(0)
	for _, want := range []string{"Ramp rates", "needs a request Count", "Steps[0].Duration", "Steps[0].Rate", "at most one"} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestSecondsRoundsAsMathRound holds seconds' inline rounding to
// math.Round's, the twin it replaces below 2⁵² ns: at random instants of
// every scale, at and beside the halves (where the inline path's
// comparison decides), and at its edges.
func TestSecondsRoundsAsMathRound(t *testing.T) {
	want := func(s float64) time.Duration {
		ns := math.Round(s * 1e9)
		if ns >= math.MaxInt64 {
			return math.MaxInt64
		}
		return time.Duration(ns)
	}
	rng := rand.New(rand.NewPCG(41, 7))
	var xs []float64
	for range 200_000 {
		x := rng.Float64() * math.Pow(10, float64(rng.IntN(16)-6)) // 1 µs·1e-3 to 1e9 s
		xs = append(xs, x)
		h := (math.Floor(x*1e9) + 0.5) / 1e9 // near a half
		xs = append(xs, h, math.Nextafter(h, 0), math.Nextafter(h, 2*h+1))
	}
	edge := float64(1<<52) / 1e9
	xs = append(xs, 0, 0.5e-9, math.Nextafter(0.5e-9, 0), 1.5e-9, 2.5e-9, edge, math.Nextafter(edge, 0), math.Nextafter(edge, 2*edge), -0.5e-9, -1, 1e12, math.Inf(1))
	for _, x := range xs {
		if got, w := seconds(x), want(x); got != w {
			t.Fatalf("seconds(%v) = %d, math.Round's %d", x, got, w)
		}
	}
}
