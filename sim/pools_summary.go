package sim

import (
	"fmt"
	"math"
	"slices"
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
	s.Transfer = d.transfer.distOnly(m, sc)
	var ok bool
	if s.KVWait, s.FirstITL, ok = d.shiftedDists(m, sc); !ok {
		s.KVWait, s.FirstITL = d.kvWait.distOnly(m, sc), d.firstGap.distOnly(m, sc)
	}
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

// shiftedDists is the KVWait and FirstITL samples' Dists (distOnly's)
// from one sort, when the first gaps that do not exceed their requests'
// KVWaits by waitShift are few (odd) and the two samples hold as many
// exact values: it sorts the first gaps, and reads the KVWaits off
// them, each less waitShift, but odd's, which it takes from odd. It
// reports false, and changes nothing, otherwise.
//
// Why the KVWaits are those: a first gap is added (plannedRemote) for a
// measured Remote request at the plan of its decode replica's first
// step (Plan.Started: once a request), which admits it only once its KV
// has landed, and land added its KVWait then (measured is decided at
// its arrival). So the first gaps' requests are distinct, and among the
// KVWaits' requests; as many values in each, they are the same
// requests. Those not in odd have KVWaits of their first gaps less
// waitShift, which keeps their order and gives each exactly; the sorted
// KVWaits are then those merged with odd's, sorted. Equal first gaps
// are the same number, so that which of them is taken out for an odd
// one leaves the same values. Their milliseconds are msOf's, as sortMS
// converts, and each Dist is DistOf of the same values in the same
// order. The second sort cost Regime/Disagg 51 instructions a request
// (10,152 then 10,101, the budget test; 4 of its 2,000 first gaps are
// odd). Its twin is twins.sortEachWait; TestShiftedWaitsAreTheSorts
// holds the two to it.
func (d *disagg) shiftedDists(m stats.Method, sc *scratch) (kv, first stats.Dist, ok bool) {
	if d.waitShift == noShift {
		d.chooseShift()
	}
	k, f, c := &d.kvWait, &d.firstGap, d.waitShift
	if d.sortEach || c == noShift || c == shiftOff || k.sk != nil || f.sk != nil || k.sorted() || f.sorted() {
		return kv, first, false
	}
	k.sync()
	f.sync()
	n := len(f.x) + f.n
	if n == 0 || len(k.x)+k.n != n {
		return kv, first, false
	}
	x := append(sc.vals[:0], f.x...)
	for _, ch := range f.chunks {
		x = append(x, *ch...)
	}
	sc.vals = x[:0]
	sc.sort = stats.SortDurations(x, sc.sort)
	// odd's gaps and waits, each sorted.
	var gaps, waits [oddMax]time.Duration
	for i, p := range d.odd {
		gaps[i], waits[i] = p.gap, p.wait
	}
	og, ow := gaps[:len(d.odd)], waits[:len(d.odd)]
	slices.Sort(og)
	slices.Sort(ow)
	if cap(sc.sort) < n {
		sc.sort = make([]time.Duration, n)
	}
	y := asFloats(sc.sort[:n])[:0]
	a, b := 0, 0
	for _, v := range x {
		if a < len(og) && v == og[a] { // an odd one's: its KVWait is ow's
			a++
			continue
		}
		w := v - c
		for b < len(ow) && ow[b] < w {
			y = append(y, msOf(ow[b]))
			b++
		}
		y = append(y, msOf(w))
	}
	for _, w := range ow[b:] {
		y = append(y, msOf(w))
	}
	if a != len(og) || len(y) != n {
		panic("sim: invariant shifted-waits broken: an odd first gap is not among the first gaps")
	}
	kv, first = stats.DistOf(y, m), stats.DistOf(sortedToMS(x), m)
	k.free()
	f.free()
	k.x, f.x = nil, nil
	d.shifted = true
	return kv, first, true
}
