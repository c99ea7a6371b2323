package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/servesim/servesim/sim/stats"
	"github.com/stretchr/testify/require"
)

// The offered distributions are the ok ones until a request ends
// otherwise, and are then copied (collector.mixed): whatever the first
// such request's place, before or after the exact samples' limit, and
// with none, they come out as if every offered request's latencies had
// been kept apart from the start.
func TestOfferedDistributionsKeptApartFromTheFirstNotOK(t *testing.T) {
	for _, limit := range []int{0, 50} {
		for _, firstBad := range []int{-1, 0, 10, 49, 50, 51, 300} {
			t.Run(fmt.Sprintf("limit %d, first not ok %d", limit, firstBad), func(t *testing.T) {
				c := collector{slo: SLO{}.WithDefaults()}
				c.setExact(limit)
				var ttft, e2e sample // kept apart from the start, as before the copy
				for i := range 400 {
					rec := Record{ID: uint64(i), Arrival: time.Duration(i) * time.Second, Sent: true,
						Input: 100, Output: 10, Emitted: 10, Measured: true, Status: StatusOK}
					rec.Scheduled = rec.Arrival
					rec.FirstScheduled = rec.Arrival
					rec.FirstToken = rec.Arrival + time.Duration(100+37*i%911)*time.Millisecond
					rec.LastToken = rec.FirstToken + time.Duration(400+53*i%613)*time.Millisecond
					rec.Finish = rec.LastToken
					if firstBad >= 0 && i >= firstBad && i%7 == firstBad%7 {
						rec.Status = StatusTimedOut // never finished: its E2E is a lower bound
						rec.Emitted, rec.LastToken = 3, rec.FirstToken+time.Second
						rec.Finish = rec.LastToken + time.Second
					}
					if firstBad >= 0 && i == firstBad+1 {
						rec.Status, rec.FirstToken, rec.LastToken, rec.Emitted = StatusRejected, Never, Never, 0
					}
					c.count(&rec)
					ttft.add(offered(&rec, rec.FirstToken != Never, rec.FirstToken), c.limit())
					e2e.add(offered(&rec, (rec.Emitted == rec.Output || rec.LengthCapped) && rec.LastToken != Never, rec.LastToken), c.limit())
				}
				require.Equal(t, firstBad >= 0, c.mixed)
				s := c.finish(time.Hour, 0, stats.LinearInterpolation)
				sc := new(scratch)
				wantTTFT, wantTTFTDist := ttft.summarise(stats.LinearInterpolation, sc)
				wantE2E, wantE2EDist := e2e.summarise(stats.LinearInterpolation, sc)
				require.Equal(t, bitsOf(wantTTFT), bitsOf(s.Samples.TTFTOffered))
				require.Equal(t, bitsOf(wantE2E), bitsOf(s.Samples.E2EOffered))
				require.Equal(t, distBits(wantTTFTDist), distBits(s.TTFTOffered))
				require.Equal(t, distBits(wantE2EDist), distBits(s.E2EOffered))
				require.Equal(t, limit > 0, s.TTFTOffered.RelErr > 0, "sketched past the limit")
			})
		}
	}
}

func distBits(d stats.Dist) []uint64 {
	return bitsOf([]float64{float64(d.N), d.Mean, d.Std, d.Median, d.P90, d.P95, d.P99, d.Max, d.RelErr})
}
