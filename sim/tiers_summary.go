package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/sim/stats"
)

// TierSummary is what a fleet's KV tiers below HBM served
// (Summary.Tiers): where the measured requests' prompt tokens were found,
// what moved, and what the loads cost in TTFT.
type TierSummary struct {
	// InputTokens is the measured requests' prompt tokens; HBM, Host and
	// Shared are those found in their replica's prefix cache at first
	// scheduling (Summary.Cached), loaded from its host tier, and loaded
	// from the shared store before it (Record.Cached, CachedHost,
	// CachedShared); HBMHit, HostHit and SharedHit are each over
	// InputTokens (NaN with none), and their sum the prompt's share that
	// was not computed.
	InputTokens, HBM, Host, Shared int
	HBMHit, HostHit, SharedHit     float64
	// Loads is the measured requests' loads that landed (a preempted
	// request's reloads too) and LoadWait their times, from the plan that
	// reserved each to its landing, in ms.
	Loads    int
	LoadWait stats.Dist
	// TTFTShareLoading is Σ Record.TierLoad over Σ TTFT, over the
	// measured requests with a first token: the share of their time to
	// first token spent waiting for loads (NaN with none).
	TTFTShareLoading float64
	// TTFTMissesLoading counts the measured requests whose TTFT missed
	// the SLO's bound but would have met it without their loads' wait
	// (TTFT − TierLoad within the bound): a miss the loads caused. It is
	// a sub-count of the TTFT misses, not another exclusive cause, so
	// Offered = Good + Misses.Total() still holds.
	TTFTMissesLoading int
	// HostBytes and SharedBytes are the bytes each tier's links moved
	// inside the declared window (every load, measured or not);
	// HostUtilisation is HostBytes / (Bandwidth × window × replicas),
	// SharedUtilisation SharedBytes / (Bandwidth × window) (NaN for an
	// instantaneous link or an empty window); HostBusy and SharedBusy the
	// mean share of the window a link was moving bytes.
	HostBytes, SharedBytes             float64
	HostUtilisation, SharedUtilisation float64
	HostBusy, SharedBusy               float64
	// HostEvictions and SharedEvictions count the blocks each tier
	// evicted over the whole run (all host tiers together), HostDropped
	// and SharedDropped the stores refused for want of room.
	HostEvictions, SharedEvictions int64
	HostDropped, SharedDropped     int64
}

// String prints the summary's fields, as %+v prints a struct.
func (s *TierSummary) String() string {
	if s == nil {
		return "<nil>"
	}
	type plain TierSummary
	return fmt.Sprintf("%+v", plain(*s))
}

// tierCounts are the measured records' tallies as they end.
type tierCounts struct {
	input, hbm, host, shared int
	load, ttft               time.Duration // over those with a first token
	missLoading              int
}

// count tallies a measured record as it ends, against its SLO.
func (t *tiers) count(rec *Record, slo SLO) {
	c := &t.counted
	c.input += rec.Input
	c.hbm += rec.Cached
	c.host += rec.CachedHost
	c.shared += rec.CachedShared
	if rec.FirstToken == Never {
		return
	}
	ttft := rec.TTFT()
	c.load += rec.TierLoad
	c.ttft += ttft
	if ttft > slo.TTFT && ttft-rec.TierLoad <= slo.TTFT {
		c.missLoading++
	}
}

// summary is the run's TierSummary, the links' integrals over the
// declared window from opens for declared.
func (t *tiers) summary(opens, declared time.Duration, m stats.Method) *TierSummary {
	c := &t.counted
	out := &TierSummary{InputTokens: c.input, HBM: c.hbm, Host: c.host, Shared: c.shared,
		HBMHit: math.NaN(), HostHit: math.NaN(), SharedHit: math.NaN(), Loads: t.loads,
		TTFTShareLoading: math.NaN(), TTFTMissesLoading: c.missLoading,
		HostUtilisation: math.NaN(), SharedUtilisation: math.NaN(), HostBusy: math.NaN(), SharedBusy: math.NaN()}
	if c.input > 0 {
		in := float64(c.input)
		out.HBMHit, out.HostHit, out.SharedHit = float64(c.hbm)/in, float64(c.host)/in, float64(c.shared)/in
	}
	if c.ttft > 0 {
		out.TTFTShareLoading = c.load.Seconds() / c.ttft.Seconds()
	}
	sc := scratchPool.Get().(*scratch)
	out.LoadWait = t.loadWait.distOnly(m, sc)
	scratchPool.Put(sc)
	sec := declared.Seconds()
	if t.host != nil {
		var busy time.Duration
		for i := range t.host {
			h := &t.host[i]
			t.landed = h.link.land(opens+declared, t.landed[:0]) // brings its integrals up to the window's end
			out.HostBytes += h.link.bytesIn()
			busy += h.link.busyIn()
			k := h.lru.Counters()
			out.HostEvictions += k.Evictions
			out.HostDropped += k.Dropped
		}
		if sec > 0 {
			n := float64(len(t.host))
			out.HostBusy = busy.Seconds() / sec / n
			if t.hostLink.Bandwidth > 0 {
				out.HostUtilisation = out.HostBytes / (t.hostLink.Bandwidth * sec * n)
			}
		}
	}
	if t.shared != nil {
		t.landed = t.link.land(opens+declared, t.landed[:0])
		out.SharedBytes = t.link.bytesIn()
		k := t.shared.Counters()
		out.SharedEvictions, out.SharedDropped = k.Evictions, k.Dropped
		if sec > 0 {
			out.SharedBusy = t.link.busyIn().Seconds() / sec
			if t.sharedLink.Bandwidth > 0 {
				out.SharedUtilisation = out.SharedBytes / (t.sharedLink.Bandwidth * sec)
			}
		}
	}
	return out
}
