package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/sim/stats"
)

// DisaggSummary is what a disaggregated fleet traded (Summary.Disagg).
type DisaggSummary struct {
	// Prefill and Decode are the replicas in each pool.
	Prefill, Decode int
	// Remote is the measured requests the prefill pool prefilled, Local
	// those their decode replica prefilled (the decider's split), and
	// RemoteShare Remote over both (NaN with neither).
	Remote, Local int
	RemoteShare   float64
	// KVWait is how long measured remote requests waited for their decode
	// replica to reserve blocks after their prefill, Transfer how long
	// their KV then took to land (of those whose KV landed), and FirstITL
	// the gap between their first token (at the prefill replica) and
	// their second (the end of their decode replica's first step), which
	// holds both (of those whose first decode was planned), in ms.
	KVWait, Transfer, FirstITL stats.Dist
	// Bytes is the KV bytes moved over every link inside the declared
	// window, and LinkUtilisation Bytes / (Bandwidth × window × links):
	// the share of the links' capacity used (NaN for an unbounded
	// bandwidth or an empty window). LinkBusy is the mean share of the
	// window a link was moving bytes.
	Bytes                     float64
	LinkUtilisation, LinkBusy float64
	// PrefillBusy and DecodeBusy are each pool's mean Busy
	// (ReplicaSummary.Busy), PrefillKV and DecodeKV its mean KVOccupancy.
	PrefillBusy, DecodeBusy float64
	PrefillKV, DecodeKV     float64
}

// String prints the summary's fields, as %+v prints a struct (so that
// a Summary printed with %+v shows them, not the pointer).
func (s *DisaggSummary) String() string {
	if s == nil {
		return "<nil>"
	}
	type plain DisaggSummary
	return fmt.Sprintf("%+v", plain(*s))
}

// summary is the run's DisaggSummary, from the replicas' summaries and
// the links' integrals over the declared window.
func (d *disagg) summary(offered int, reps []ReplicaSummary, opens, declared time.Duration, m stats.Method) *DisaggSummary {
	s := &DisaggSummary{Prefill: len(d.links), Decode: d.decoders, Remote: d.remote, Local: offered - d.remote,
		RemoteShare: math.NaN(), LinkUtilisation: math.NaN(), LinkBusy: math.NaN()}
	if offered > 0 {
		s.RemoteShare = float64(d.remote) / float64(offered)
	}
	sc := scratchPool.Get().(*scratch)
	s.KVWait, s.Transfer, s.FirstITL = d.kvWait.distOnly(m, sc), d.transfer.distOnly(m, sc), d.firstGap.distOnly(m, sc)
	scratchPool.Put(sc)
	var busy time.Duration
	for i := range d.links {
		d.landed = d.links[i].land(opens+declared, d.landed[:0]) // brings its integrals up to the window's end
		s.Bytes += d.links[i].bytesIn()
		busy += d.links[i].busyIn()
	}
	if sec := declared.Seconds(); sec > 0 {
		links := float64(len(d.links))
		s.LinkBusy = busy.Seconds() / sec / links
		if d.link.Bandwidth > 0 {
			s.LinkUtilisation = s.Bytes / (d.link.Bandwidth * sec * links)
		}
	}
	s.DecodeBusy, s.DecodeKV = poolMeans(reps[:d.decoders])
	s.PrefillBusy, s.PrefillKV = poolMeans(reps[d.decoders:])
	return s
}

// poolMeans is the mean Busy and KVOccupancy of a pool's replicas.
func poolMeans(reps []ReplicaSummary) (busy, kv float64) {
	for _, r := range reps {
		busy += r.Busy
		kv += r.KVOccupancy
	}
	n := float64(len(reps))
	return busy / n, kv / n
}
