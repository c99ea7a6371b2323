package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// attribute's verdict, tested once before the misses are listed, is the
// verdict of the misses listed for every request (attributeEach), and
// counts the same misses: random records, ok and not, against random
// SLOs, each bound sometimes the record's latency itself, in either ITL
// series. count's verdict, judged in its own lines for an ok record,
// is the same, with the same misses counted.
func TestAttributeIsEachMiss(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pick := func(v time.Duration) time.Duration { // a bound below, at or above v
		return v + time.Duration(rng.IntN(3)-1)*time.Millisecond*time.Duration(rng.IntN(2))
	}
	var fast, each, counted collector
	for range 20_000 {
		r := Record{Status: StatusOK, Arrival: time.Duration(rng.IntN(1000)) * time.Millisecond}
		if rng.IntN(8) == 0 {
			r.Status = Status(rng.IntN(int(numStatus)))
		}
		r.FirstToken = r.Arrival + time.Duration(1+rng.IntN(900))*time.Millisecond
		r.Emitted = 1 + rng.IntN(4)
		r.LastToken = r.FirstToken + time.Duration(r.Emitted-1)*time.Duration(rng.IntN(90))*time.Millisecond
		r.MaxITL = time.Duration(rng.IntN(120)) * time.Millisecond
		r.MaxTokenITL = r.MaxITL / time.Duration(1+rng.IntN(2))
		slo := SLO{TTFT: pick(r.TTFT()), ITL: pick(r.MaxITL), TPOT: Unbounded, E2E: Unbounded, ITLSeries: ITLSeries(rng.IntN(2))}
		if rng.IntN(2) == 0 {
			slo.TPOT = pick(max(r.TPOT(), 0))
		}
		if rng.IntN(2) == 0 {
			slo.E2E = pick(r.E2E())
		}
		good := each.attributeEach(&r, &slo)
		require.Equal(t, good, fast.attribute(&r, &slo), "%+v against %+v", r, slo)
		counted.slo, counted.s.Good = slo, 0
		counted.count(&r)
		require.Equal(t, good, counted.s.Good == 1, "count: %+v against %+v", r, slo)
	}
	require.Equal(t, each.s.Misses, fast.s.Misses)
	require.Equal(t, each.s.Causes, fast.s.Causes)
	require.Equal(t, each.s.Misses, counted.s.Misses)
	require.Equal(t, each.s.Causes, counted.s.Causes)
	require.Positive(t, fast.s.Misses.TPOT, "no TPOT miss came first")
	require.Positive(t, fast.s.Causes.E2E, "no E2E miss")
}

// attributeEach is attribute with every request's misses listed and
// counted in the loop (its slow twin).
func (c *collector) attributeEach(r *Record, slo *SLO) bool {
	if r.Status != StatusOK {
		return c.attribute(r, slo) // not under test: counted before the misses
	}
	itl := r.MaxITL
	if slo.ITLSeries == PerToken {
		itl = r.MaxTokenITL
	}
	miss := [4]bool{r.TTFT() > slo.TTFT, itl > slo.ITL, r.Emitted > 1 && r.TPOT() > slo.TPOT, r.E2E() > slo.E2E}
	excl := [4]*int{&c.s.Misses.TTFT, &c.s.Misses.ITL, &c.s.Misses.TPOT, &c.s.Misses.E2E}
	causes := [4]*int{&c.s.Causes.TTFT, &c.s.Causes.ITL, &c.s.Causes.TPOT, &c.s.Causes.E2E}
	good := true
	for i, m := range miss {
		if m {
			*causes[i]++
			if good {
				*excl[i]++
				good = false
			}
		}
	}
	return good
}
