package sim

import (
	"cmp"
	"embed"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/internal/revision"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
	"gonum.org/v1/gonum/stat"
)

// Misses counts SLO misses by cause. Exclusive counts attribute each miss to
// the first cause in the order Gateway → NotOK → TTFT → ITL → TPOT → E2E,
// so that offered = good + their sum; non-exclusive counts every cause
// that holds.
type Misses struct {
	NotOK, TTFT, ITL, TPOT, E2E int
	// Gateway counts the requests the gateway ended (Status.Gateway:
	// throttled, shed, refused for a full queue, expired); NotOK the
	// others not ok. 0 without a Config.Gateway.
	Gateway int
}

// Total is the sum of the counts.
func (m Misses) Total() int { return m.Gateway + m.NotOK + m.TTFT + m.ITL + m.TPOT + m.E2E }

// Summary is the result of one run over its measurement window.
type Summary struct {
	Window time.Duration // the window's length

	Offered int            // measured requests (arrived in the window)
	Good    int            // ok and every SLO bound held
	Status  [numStatus]int // measured requests by terminal status
	Misses  Misses         // exclusive attribution
	Causes  Misses         // non-exclusive counts
	Tokens  int            // output tokens emitted by measured requests
	// GoodTokens is the output tokens the good requests emitted (ok and
	// every SLO bound held): the SLO-qualified output, what a cost per
	// million good tokens divides by.
	GoodTokens int
	// Cached is the prompt tokens measured requests found in the prefix
	// cache, of InputTokens in all.
	Cached, InputTokens int
	Method              stats.Method // how percentiles were computed
	SLO                 SLO          // the SLO applied, defaults filled in
	Preempt             int          // preemptions of measured requests
	// LengthCapped counts the measured requests that ended ok cut at
	// their replica's MaxModelLen (Record.LengthCapped): among
	// Status[StatusOK], served with fewer output tokens than asked.
	LengthCapped int

	Goodput float64 // good requests per second of window
	// GoodTokenRate is GoodTokens per second of window (0 for an empty
	// window, as Goodput).
	GoodTokenRate float64
	// Attainment is Good / Offered, or NaN when no measured request reached
	// an outcome (see NoMeasured): such a window has no attainment. A run
	// stopped by its backlog bound before its window opened has attainment
	// 0: every request the window would have offered waits behind a backlog
	// the replica cannot clear.
	Attainment float64
	// RequestThroughput and OutputThroughput are what the replica
	// delivered inside the window, measured or not: requests completed ok
	// and output tokens emitted there, per second. Past the knee they stay
	// at capacity however much is offered.
	RequestThroughput float64
	OutputThroughput  float64
	Completed         int // requests completed ok inside the window
	WindowTokens      int // output tokens emitted inside the window

	// ITL is per streamed chunk, as vLLM's bench serve measures it.
	TTFT, TPOT, ITL, E2E, QueueDelay stats.Dist
	// ITLRetokenized is the per-token series (SGLang's retokenized ITL):
	// each chunk's gap divided by its tokens, counted once per token. It
	// is ITL without speculative decoding, never above it otherwise.
	ITLRetokenized stats.Dist
	// WorstITL is each request's worst inter-token gap (Record.MaxITL,
	// per streamed chunk as ITL is), one value a measured request that
	// emitted two tokens or more, whatever its status: the requests and
	// gaps ITL is over, so its Max is ITL's. An SLO on every ITL gates
	// this figure, not ITL's percentiles: a request misses when its worst
	// gap passes the bound, so a tail ITL p99 leaves under the bound can
	// still fail many requests.
	WorstITL stats.Dist
	// Speculation is the speculative decoding of the measured requests;
	// the zero SpecSummary without any.
	Speculation SpecSummary
	// TTFTOffered and E2EOffered are TTFT and E2E over every measured
	// request, not only those that completed ok as vLLM reports them (and
	// as TTFT and E2E are): a request without a first token (a last one)
	// counts at the instant it ended if it was waiting (its deadline, or
	// the run's stop: a lower bound), and beyond every bound (+Inf) if it
	// was refused or failed before any token. When they exceed TTFT and
	// E2E, failures are hiding the tail.
	TTFTOffered, E2EOffered stats.Dist

	// Little's law: MeanInSystem is the time-average number of requests
	// held by the replica over the window (all requests, measured or not);
	// ArrivalRate is accepted measured arrivals per second and MeanSojourn
	// their mean time in the replica. L = λ·W up to edge effects.
	MeanInSystem float64
	ArrivalRate  float64
	MeanSojourn  time.Duration
	// GatewayQueue is the time-average number of requests waiting at the
	// gateway's queue (Gateway.Limit) over the declared window; 0
	// without one. Little's law holds it to the rate of the requests the
	// gateway admitted past its bucket and detector times their mean
	// Record.GatewayWait, up to edge effects.
	GatewayQueue float64

	// HeldAtStart and HeldAtEnd are the requests held by the replica (all
	// requests, measured or not) when the window opened and when it closed
	// (at Horizon, or at the end of an open window): a backlog that grows
	// across the window marks a load the replica does not sustain.
	HeldAtStart, HeldAtEnd int
	// ClientHeldAtStart and ClientHeldAtEnd are the requests waiting
	// client-side for a slot (Config.MaxConcurrency) when the declared
	// window opened and closed: a client queue that grows is a load the
	// fleet does not sustain either, though TTFT, counted from the send as
	// vLLM counts it, does not show it. Unsent counts the measured
	// requests still waiting client-side when the run stopped (unfinished,
	// never sent).
	ClientHeldAtStart, ClientHeldAtEnd, Unsent int

	// Warmup says which requests were left out as warm-up and where the
	// measured window began.
	Warmup WarmupReport

	// ClientWait is how long measured requests waited client-side for a
	// slot under Config.MaxConcurrency before being sent (inference-perf's
	// schedule delay), ms; 0 for all without a cap.
	ClientWait stats.Dist
	// Classes is each class's share of the measured requests, judged by
	// its own SLO, in Config.Classes' order and the default class last;
	// nil without classes. The aggregate judges each request by its
	// class's SLO too.
	Classes []ClassSummary

	// Steps is how the time of the steps that ended in the declared window
	// divides by composition (decode only, mixed, prefill only), over every
	// replica.
	Steps StepMix

	// Replicas is each replica's share of the run, in replica order (one
	// for a single replica), and Imbalance how unevenly the fleet's work
	// fell on them.
	Replicas  []ReplicaSummary
	Imbalance Imbalance
	// Disagg is a disaggregated fleet's trade (Fleet.Prefill): where
	// requests were prefilled, the waits and bytes of their transfers,
	// and each pool's load; nil for a co-located fleet.
	Disagg *DisaggSummary `json:",omitempty"`
	// Tiers is what the KV tiers below HBM served (Fleet.HostTier,
	// Fleet.SharedStore): prompt tokens found in each tier, bytes loaded,
	// link use, the share of TTFT spent loading; nil without tiers.
	Tiers *TierSummary `json:",omitempty"`
	// Scale is what an autoscaled fleet did: its replica-hours by state,
	// joins and leaves, and its timeline (Fleet.Autoscale); nil for a
	// fixed fleet.
	Scale *ScaleSummary `json:",omitempty"`

	// Stopped is the instant the run stopped: the last terminal event of
	// an open window, at most Horizon + Drain, or the overload stop.
	Stopped time.Duration
	// Overloaded says the replica came to hold more than Config.MaxBacklog
	// requests and the run stopped there: every request then held ended
	// unfinished and no later request arrived, so the window ends at
	// Stopped (if that is before the Horizon) and the figures describe a
	// load the replica does not sustain.
	Overloaded bool

	// Samples keeps the raw distributions the Dists were computed from, so
	// that runs can be pooled and intervals bootstrapped.
	Samples Samples
}

// ReplicaSummary is one replica's share of a run: the measured requests
// the router sent it, their goodput, attainment and latencies over the
// window, its prefix cache's hits, and how busy and how full its KV cache
// was over the declared window (measured over the steps that ended in it).
type ReplicaSummary struct {
	Replica       int
	Offered, Good int
	Goodput       float64 // good requests per second of window
	Attainment    float64 // Good / Offered; NaN as Summary.Attainment is
	// Cached is the prompt tokens its measured requests found in its
	// prefix cache, of InputTokens in all (PrefixHitRate).
	Cached, InputTokens  int
	Preempt              int
	TTFT, TPOT, ITL, E2E stats.Dist
	// Busy is the fraction of the window it had a step in flight,
	// KVOccupancy the time-average fraction of its KV blocks held (vLLM's
	// "GPU KV cache usage"), and MeanHeld the time-average number of
	// requests it held, waiting or running (its L in Little's law); NaN
	// for an empty window. In an autoscaled fleet (Fleet.Autoscale) they
	// are over the part of the window it served or drained, and NaN for
	// a replica that never served in it.
	Busy, KVOccupancy, MeanHeld float64
}

// PrefixHitRate is the fraction of the prompt tokens of its measured
// requests served from its prefix cache (NaN without any).
func (s ReplicaSummary) PrefixHitRate() float64 {
	if s.InputTokens == 0 {
		return math.NaN()
	}
	return float64(s.Cached) / float64(s.InputTokens)
}

// Imbalance is how unevenly a fleet's work fell on its replicas: the
// largest replica's share over the mean share, of the measured requests
// routed to each, of their busy time and of the requests they held on
// average (1 is perfectly even; NaN when there was nothing to share). A
// replica busy decoding all the time is busy whatever its queue: Held is
// the one that shows routers herding.
type Imbalance struct {
	Requests, Busy, Held float64
}

// Samples are the raw latencies of one run's measured requests, in
// milliseconds, each slice sorted ascending: TTFT, TPOT, E2E and queue delay
// of the requests that completed ok (TPOT of those with two tokens or more),
// every inter-token gap as distinct values with their counts, and each
// request's worst gap (Summary.WorstITL). A latency
// that passed Config.ExactSamples values was sketched instead: its slice is
// nil and its Dist's RelErr says within what its percentiles are.
type Samples struct {
	TTFT, TPOT, E2E, Queue []float64
	ITL                    []ValueCount
	ITLRetokenized         []ValueCount // as Summary.ITLRetokenized
	WorstITL               []float64    // as Summary.WorstITL
	// TTFTOffered and E2EOffered are over every measured request (see
	// Summary.TTFTOffered); +Inf stands beyond every bound.
	TTFTOffered, E2EOffered []float64
}

// ValueCount is a value (ms) that occurred Count times.
type ValueCount struct {
	Value float64
	Count int
}

// NoMeasured reports whether no measured request reached an outcome: none
// arrived in the window, or every one was still in flight when the run
// stopped at Horizon + Drain (a window and drain shorter than a request).
// Such a run is no evidence: its attainment is NaN, and it takes part in no
// knee and no verdict. A run stopped by its backlog bound (Overloaded) is
// evidence: the replica did not sustain the load.
//
// Requests that waited client-side until the run stopped (Unsent) are
// evidence: of a client queue the fleet could not drain.
func (s *Summary) NoMeasured() bool {
	return !s.Overloaded && s.Unsent == 0 && s.Count(StatusUnfinished) == s.Offered
}

// Sketched reports whether some of the summary's latency distributions
// came from a sketch (Dist.RelErr > 0) rather than exact samples.
func (s *Summary) Sketched() bool { return s.MaxRelErr() > 0 }

// MaxRelErr is the largest RelErr among the summary's latency
// distributions: 0 when every percentile is exact.
func (s *Summary) MaxRelErr() float64 {
	e := 0.0
	for _, d := range []stats.Dist{s.TTFT, s.TPOT, s.ITL, s.E2E, s.QueueDelay, s.ITLRetokenized, s.WorstITL, s.TTFTOffered, s.E2EOffered, s.ClientWait} {
		e = max(e, d.RelErr)
	}
	return e
}

// Count returns the number of measured requests that ended in status s.
func (s *Summary) Count(st Status) int { return s.Status[st] }

// collector accumulates measured records into a Summary.
type collector struct {
	slo                    SLO
	classSLO               func(r *Record) SLO // per-class SLOs, when classes are set
	s                      Summary
	exact                  int // values kept exactly per latency, 0 for the default
	ttft, tpot, e2e, queue sample
	ttftAll, e2eAll        sample // over every measured request, once mixed
	wait                   sample // client-side waits of the sent ones
	worst                  sample // each measured request's worst gap (two tokens or more)
	itl                    weighted
	itlTok                 weighted  // retokenized gaps, when speculating
	spec                   specStats // measured requests' speculation
	sojourn                time.Duration
	accepted               int
	// (The four bools share a word: each alone before a sample took one,
	// and a replica, which holds a collector, 16 bytes more.)
	// mixed: some measured request did not end ok. Until then the
	// offered distributions are the ok ones, value for value (an ok
	// request's offered latencies are its TTFT and E2E), and are not kept
	// apart; the first other request copies them (count).
	mixed      bool
	speculates bool // some replica decodes speculatively
	// share: a fleet replica's collector, whose summary is read only
	// for a ReplicaSummary's fields (finish): it keeps the counts those
	// read (countShared), and of the latencies only TTFT, TPOT, E2E and
	// ITL.
	share bool
	// With a detected warm-up, eligible records wait here until the
	// truncation is known.
	detect   bool
	eligible []Record
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// hold keeps r, without its tokens, until the warm-up is detected. A
// collector that does not detect it counts a record at once (count).
func (c *collector) hold(r *Record) {
	k := *r
	k.Tokens = nil
	c.eligible = append(c.eligible, k)
}

// sloFor is the SLO a record is judged by: its class's, or the
// collector's.
func (c *collector) sloFor(r *Record) SLO {
	if c.classSLO != nil {
		return c.classSLO(r)
	}
	return c.slo
}

func (c *collector) count(r *Record) {
	c.s.Offered++
	c.s.Status[r.Status]++
	c.s.Tokens += r.Emitted
	c.s.Cached += r.Cached
	c.s.InputTokens += r.Input
	c.s.Preempt += r.Preemptions
	if r.LengthCapped {
		c.s.LengthCapped++
	}
	// The replicas' Little's law: the gateway's refusals never reached
	// one, and a request that waited at the gateway entered its replica
	// after the wait (one that timed out there adds no time).
	if r.Status != StatusRejected && r.Status < StatusThrottled {
		c.accepted++
		c.sojourn += r.Finish - r.Arrival - r.GatewayWait
	}
	slo := &c.slo // a pointer, not a copy of the SLO for each request counted
	if c.classSLO != nil {
		s := c.classSLO(r)
		slo = &s
	}
	// An ok record's latencies, computed once for the verdict and the
	// samples (attribute computed them again).
	var ttft, e2e, tpot time.Duration
	var good bool
	// An ok record judged here, judge's lines with its call spared:
	// RunAtlas 4,933 then 4,922 instructions a request, the budget test's
	// count (misses inlined in both; TestAttributeIsEachMiss holds the
	// two to attributeEach).
	if r.Status == StatusOK {
		ttft, e2e, tpot = r.TTFT(), r.E2E(), r.TPOT()
		t, i, p, e := misses(r, slo, ttft, e2e, tpot)
		if good = !(t || i || p || e); !good {
			c.miss(t, i, p, e)
		}
	} else {
		good = c.judge(r, slo, 0, 0, 0)
	}
	if good {
		c.s.Good++
		c.s.GoodTokens += r.Emitted
	}
	k := c.limit()
	if r.Sent {
		c.wait.add(r.Arrival-r.Scheduled, k)
	} else if r.Status == StatusUnfinished {
		c.s.Unsent++
	}
	if r.Emitted > 1 {
		c.worst.add(r.MaxITL, k)
	}
	if r.Status != StatusOK || c.mixed {
		c.countOffered(r, k)
		if r.Status != StatusOK {
			return
		}
	}
	c.ttft.add(ttft, k)
	c.e2e.add(e2e, k)
	c.queue.add(r.QueueDelay(), k)
	if r.Emitted > 1 {
		c.tpot.add(tpot, k)
	}
}

// countShared is count for a replica's share (share), given the verdict
// on r (good, count's verdict by the replica's SLO): it keeps what a
// ReplicaSummary reads (finish), the counts and TTFT, E2E and TPOT of
// the ok requests, added as count adds them, and not the misses, tokens,
// sojourns and other latencies no share reports. (Judging each request
// again for its share cost Fleet8LeastLoaded about 70 instructions a
// request, when the run's verdict is the same.)
func (c *collector) countShared(r *Record, good bool) {
	c.s.Offered++
	c.s.Status[r.Status]++
	c.s.Cached += r.Cached
	c.s.InputTokens += r.Input
	c.s.Preempt += r.Preemptions
	if good {
		c.s.Good++
	}
	if !r.Sent && r.Status == StatusUnfinished {
		c.s.Unsent++ // NoMeasured reads it
	}
	if r.Status != StatusOK {
		return
	}
	k := c.limit()
	c.ttft.add(r.TTFT(), k)
	c.e2e.add(r.E2E(), k)
	if r.Emitted > 1 {
		c.tpot.add(r.TPOT(), k)
	}
}

// countOffered adds r to the offered TTFT and E2E distributions, which
// shadow the ok ones until the first request that is not ok (out of
// line: a run of ok requests never calls it).
func (c *collector) countOffered(r *Record, k int) {
	if !c.mixed {
		c.mixed = true
		c.ttftAll, c.e2eAll = c.ttft.clone(), c.e2e.clone()
	}
	c.ttftAll.add(offered(r, r.FirstToken != Never, r.FirstToken), k)
	c.e2eAll.add(offered(r, (r.Emitted == r.Output || r.LengthCapped) && r.LastToken != Never, r.LastToken), k)
}

// limit is how many values of each latency the collector keeps exactly.
func (c *collector) limit() int {
	if c.exact > 0 {
		return c.exact
	}
	return DefaultExactSamples
}

// setExact sets how many values of each latency, and distinct inter-token
// gaps, the collector keeps exactly before sketching.
func (c *collector) setExact(n int) {
	c.exact = n
	c.itl.limit, c.itlTok.limit = c.limit(), c.limit()
}

// offered is the latency from r's arrival to an instant, for the
// distributions over every offered request: the instant itself if it
// happened; else, for a request that ended waiting for it (timed out, or
// still in flight when the run stopped), the instant it ended, a lower
// bound; else beyond every bound (refused, or failed before any token):
// infMS, +Inf ms.
func offered(r *Record, happened bool, at time.Duration) time.Duration {
	switch {
	case happened:
		return at - r.Arrival
	case r.Status == StatusTimedOut || r.Status == StatusUnfinished:
		return r.Finish - r.Arrival
	}
	return infMS
}

// attribute counts r's misses against slo and reports whether it is good.
func (c *collector) attribute(r *Record, slo *SLO) bool {
	return c.judge(r, slo, r.TTFT(), r.E2E(), r.TPOT())
}

// judge is attribute given r's TTFT, E2E and TPOT (read only when r is
// ok).
func (c *collector) judge(r *Record, slo *SLO, ttft, e2e, tpot time.Duration) bool {
	if r.Status != StatusOK {
		if r.Status.Gateway() {
			c.s.Misses.Gateway++
			c.s.Causes.Gateway++
			return false
		}
		c.s.Misses.NotOK++
		c.s.Causes.NotOK++
		return false
	}
	t, i, p, e := misses(r, slo, ttft, e2e, tpot)
	if !(t || i || p || e) { // the usual answer (its twin, attributeEach, in TestAttributeIsEachMiss)
		return true
	}
	c.miss(t, i, p, e)
	return false
}

// misses says which of slo's bounds an ok record misses, given its TTFT,
// E2E and TPOT: its first token's, its gaps', its tokens' mean gap's
// (of two tokens or more), its end's.
func misses(r *Record, slo *SLO, ttft, e2e, tpot time.Duration) (t, i, p, e bool) {
	itl := r.MaxITL
	if slo.ITLSeries == PerToken {
		itl = r.MaxTokenITL
	}
	return ttft > slo.TTFT, itl > slo.ITL, r.Emitted > 1 && tpot > slo.TPOT, e2e > slo.E2E
}

// miss counts a request's misses, one at least: each among the causes,
// the first in the fixed order among the exclusive misses. Tests and
// counts, where an array of the four and a loop over them cost 74
// instructions a miss (RunAtlas, where a third of the requests miss:
// 6,025 then 6,004 instructions a request with count's latencies
// computed once, the budget test's count).
func (c *collector) miss(ttft, itl, tpot, e2e bool) {
	m, k := &c.s.Misses, &c.s.Causes
	switch {
	case ttft:
		m.TTFT++
	case itl:
		m.ITL++
	case tpot:
		m.TPOT++
	default:
		m.E2E++
	}
	if ttft {
		k.TTFT++
	}
	if itl {
		k.ITL++
	}
	if tpot {
		k.TPOT++
	}
	if e2e {
		k.E2E++
	}
}

// finish computes the rates and distributions for a window of length w and
// the integral of requests in the system over it.
func (c *collector) finish(w time.Duration, area float64, m stats.Method) Summary {
	s := c.s
	s.Window, s.Method, s.SLO = w, m, c.slo
	if sec := w.Seconds(); sec > 0 {
		s.Goodput = float64(s.Good) / sec
		s.GoodTokenRate = float64(s.GoodTokens) / sec
		s.RequestThroughput = float64(s.Completed) / sec
		s.OutputThroughput = float64(s.WindowTokens) / sec
		s.ArrivalRate = float64(c.accepted) / sec
		s.MeanInSystem = area / sec
	}
	switch {
	case s.Offered > 0 && !s.NoMeasured():
		s.Attainment = float64(s.Good) / float64(s.Offered)
	case s.Overloaded:
		s.Attainment = 0
	default:
		s.Attainment = math.NaN()
	}
	if c.accepted > 0 {
		s.MeanSojourn = c.sojourn / time.Duration(c.accepted)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if c.share { // the distributions a ReplicaSummary reads, as below
		s.TTFT, s.TPOT, s.E2E = c.ttft.distOnly(m, sc), c.tpot.distOnly(m, sc), c.e2e.distOnly(m, sc)
		s.ITL = c.itlDist(m)
		return s
	}
	s.Samples.TTFT, s.TTFT = c.ttft.summarise(m, sc)
	s.Samples.TPOT, s.TPOT = c.tpot.summarise(m, sc)
	s.Samples.E2E, s.E2E = c.e2e.summarise(m, sc)
	s.Samples.Queue, s.QueueDelay = c.queue.summarise(m, sc)
	if c.mixed {
		s.Samples.TTFTOffered, s.TTFTOffered = c.ttftAll.summarise(m, sc)
		s.Samples.E2EOffered, s.E2EOffered = c.e2eAll.summarise(m, sc)
	} else { // every offered request was ok: the same values (see mixed)
		s.Samples.TTFTOffered, s.TTFTOffered = slices.Clone(s.Samples.TTFT), s.TTFT
		s.Samples.E2EOffered, s.E2EOffered = slices.Clone(s.Samples.E2E), s.E2E
	}
	s.ClientWait = c.wait.distOnly(m, sc)
	s.Samples.WorstITL, s.WorstITL = c.worst.summarise(m, sc)
	s.ITL, s.Samples.ITL = weightedDistCounts(&c.itl, m)
	s.ITLRetokenized, s.Samples.ITLRetokenized = s.ITL, s.Samples.ITL
	if c.speculates {
		s.ITLRetokenized, s.Samples.ITLRetokenized = weightedDistCounts(&c.itlTok, m)
		s.Speculation = c.spec.summary()
	}
	return s
}

// countsOfRuns lists a sample's distinct values with their counts, from
// its runs (weighted.runs).
func countsOfRuns(vals []float64, cum []int) []ValueCount {
	var out []ValueCount
	if len(vals) > 0 {
		out = make([]ValueCount, 0, len(vals))
	}
	prev := 0
	for i, v := range vals {
		out = append(out, ValueCount{Value: v, Count: cum[i] - prev})
		prev = cum[i]
	}
	return out
}

func (c *collector) itlDist(m stats.Method) stats.Dist { return weightedDist(&c.itl, m) }

func nan() float64 { return math.NaN() }

// weightedDist summarises a sample held as values with counts.
func weightedDist(w *weighted, m stats.Method) stats.Dist {
	w.settle()
	if w.sk != nil {
		d := w.sk.Dist(m)
		d.Mean, d.Std = w.moments()
		return d
	}
	vals, cum := w.runs()
	return distOfRuns(vals, cum, m)
}

// weightedDistCounts is weightedDist and valueCounts of w, its runs
// (a map's keys sorted) found once for both.
func weightedDistCounts(w *weighted, m stats.Method) (stats.Dist, []ValueCount) {
	w.settle()
	if w.sk != nil {
		return weightedDist(w, m), nil
	}
	vals, cum := w.runs()
	return distOfRuns(vals, cum, m), countsOfRuns(vals, cum)
}

// distOfRuns is weightedDist of a sample's runs (weighted.runs).
func distOfRuns(vals []float64, cum []int, m stats.Method) stats.Dist {
	if len(vals) == 0 {
		return stats.DistOf(nil, m)
	}
	weights := make([]float64, len(vals))
	prev := 0
	for i, k := range cum {
		weights[i] = float64(k - prev)
		prev = k
	}
	mean, std := stat.PopMeanStdDev(vals, weights)
	return stats.Dist{
		N: cum[len(cum)-1], Mean: mean, Std: std,
		Median: m.QuantileCounts(0.5, vals, cum), P90: m.QuantileCounts(0.9, vals, cum),
		P95: m.QuantileCounts(0.95, vals, cum), P99: m.QuantileCounts(0.99, vals, cum),
		Max: vals[len(vals)-1],
	}
}

// Summarize computes a run's summary from its records alone, without
// simulating: the records the run handed its Observer (every request,
// measured or not), or the same read back from its raw events
// (sim/report's ReadJSONL and ReadCSV), under the configuration that ran.
// The records are replayed in time order through the code that summarises
// a run (the collector, the window's integrals, the warm-up detection), so
// every field equals the run's own, percentiles included, except those
// that come from the engine's steps, which records do not describe:
//   - Steps (the step mix) has no steps;
//   - each replica's Busy and KVOccupancy are 0 (NaN for an empty window,
//     as in a run), so Imbalance.Busy is NaN;
//   - Speculation has no steps (records carry no per-step drafts), so its
//     rates are NaN.
//
// The ITL distributions (per chunk and retokenized) and the window's
// output tokens (WindowTokens, OutputThroughput) need every token's
// instant: records of a run with Config.KeepTokens, whose events carry
// "itl". With cfg.KeepTokens false they are left out: the ITL
// distributions are empty (N 0), WindowTokens is 0 and OutputThroughput
// NaN. With it, a record that emitted two tokens or more without its
// instants is an error. WorstITL needs only each record's MaxITL (the
// events' "max_itl"): it is the run's either way.
//
// Stopped is the instant the run stopped as the records show it: when
// unfinished requests ended, else at the Horizon or the last terminal
// event after it (with an open window, the run's last event: a terminal
// event, an arrival, or a client deadline that outlived its request). A
// run whose finite source ran dry before its Horizon stopped at its last
// event, before the Horizon: records cannot tell that apart, and Stopped
// then says the Horizon. Records may come in any order.
func Summarize(cfg Config, recs []Record) (Summary, error) {
	return summarizeWith(cfg, recs, twins{})
}

// summarizeWith is Summarize with the slow twins tw on.
func summarizeWith(cfg Config, recs []Record, tw twins) (Summary, error) {
	r, err := newRunnerWith(cfg, noSource{}, nil, tw)
	if err != nil {
		return Summary{}, err
	}
	if err := checkRecords(cfg, recs, len(r.reps)); err != nil {
		return Summary{}, err
	}
	p := recordReplay{r: r, recs: recs}
	p.schedule()
	p.run()
	p.stop()
	s := r.summary()
	if !cfg.KeepTokens {
		s.OutputThroughput = math.NaN()
	}
	return s, nil
}

// noSource stands for the workload of a run that is not simulated.
type noSource struct{}

func (noSource) Next() (workload.Request, error) { return workload.Request{}, io.EOF }

// checkRecords refuses records no run of cfg could have written.
func checkRecords(cfg Config, recs []Record, replicas int) error {
	stop := Never
	for i := range recs {
		rec := &recs[i]
		switch {
		case rec.Replica < Unrouted || rec.Replica >= replicas:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) has Replica %d, not one of the configuration's %d replicas", i, rec.ID, rec.Replica, replicas)
		case rec.Status >= numStatus:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) has no status (%d)", i, rec.ID, rec.Status)
		case rec.Finish < rec.Arrival || rec.Arrival < rec.Scheduled:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) is not in time order: scheduled %v, arrival %v, finish %v", i, rec.ID, rec.Scheduled, rec.Arrival, rec.Finish)
		case cfg.KeepTokens && rec.Emitted > 1 && len(rec.Tokens) != rec.Emitted:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) emitted %d tokens and keeps %d instants: Config.KeepTokens says the run kept them (events with their \"itl\")", i, rec.ID, rec.Emitted, len(rec.Tokens))
		}
		if rec.Status == StatusUnfinished {
			if stop != Never && rec.Finish != stop {
				return fmt.Errorf("sim: Summarize: record %d (ID %d) ends unfinished at %v, another at %v: a run stops once", i, rec.ID, rec.Finish, stop)
			}
			stop = rec.Finish
		}
	}
	return nil
}

// recordReplay drives a runner's accounting with records instead of an engine.
type recordReplay struct {
	r    *runner
	recs []Record
	evs  []replayEvent
}

// replayEvent is what happened to one record at an instant.
type replayEvent struct {
	at   time.Duration
	kind replayKind
	rec  int
}

type replayKind uint8

const (
	queued     replayKind = iota // waits client-side for a slot
	sent                         // leaves the client queue for a replica
	held                         // a replica holds it
	released                     // the replica let it go
	token                        // emitted a token (kept for a detected warm-up only)
	ended                        // its terminal event
	touched                      // nothing but the clock: an arrival that found nothing to do
	gatewayIn                    // waits at the gateway's queue
	gatewayOut                   // leaves it
)

// schedule lists every record's events, and accounts what does not
// depend on time: the inter-token gaps and, without a detected warm-up,
// the window's tokens.
func (p *recordReplay) schedule() {
	for i := range p.recs {
		rec := &p.recs[i]
		add := func(at time.Duration, k replayKind) { p.evs = append(p.evs, replayEvent{at, k, i}) }
		add(rec.Scheduled, touched)
		add(rec.Arrival, touched)
		switch {
		case rec.Sent && rec.Arrival > rec.Scheduled:
			add(rec.Scheduled, queued)
			add(rec.Arrival, sent)
		case !rec.Sent && rec.Status == StatusUnfinished:
			add(rec.Scheduled, queued) // never sent
		}
		if rec.Sent && rec.Status != StatusRejected && rec.Replica != Unrouted {
			add(rec.Arrival+rec.GatewayWait, held) // a replica took it after its wait at the gateway
			if rec.Status != StatusUnfinished {    // abandoned requests stay held
				add(rec.Finish, released)
			}
		}
		if rec.GatewayWait > 0 && p.r.gw != nil {
			add(rec.Arrival, gatewayIn)
			add(rec.Arrival+rec.GatewayWait, gatewayOut)
		}
		add(rec.Finish, ended)
		if p.r.cfg.KeepTokens {
			p.tokens(i)
		}
	}
	slices.SortStableFunc(p.evs, func(a, b replayEvent) int { return cmp.Compare(a.at, b.at) })
}

// tokens accounts record i's inter-token gaps, each chunk's (its tokens
// share one instant) against the previous one, as the runner does as
// they are emitted; and its tokens in the window.
func (p *recordReplay) tokens(i int) {
	r, rec := p.r, &p.recs[i]
	at := instants(rec)
	s := slot{rec: Record{Measured: rec.Measured, Replica: rec.Replica}, class: r.classes.of(rec.Class)}
	for j := 0; j < len(at); {
		n := 1
		for j+n < len(at) && at[j+n] == at[j] {
			n++
		}
		if j > 0 {
			r.gap(&s, at[j]-at[j-1], 1, n)
		}
		j += n
	}
	for _, t := range at {
		if r.cfg.DetectWarmup {
			p.evs = append(p.evs, replayEvent{t, token, i})
		} else {
			r.tokens += r.inWindow(t, 0, 1)
		}
	}
}

// instants are a record's token instants: those it kept, or its first
// token's when it emitted only that one.
func instants(rec *Record) []time.Duration {
	if len(rec.Tokens) == rec.Emitted {
		return rec.Tokens
	}
	if rec.Emitted == 1 && rec.FirstToken != Never {
		return []time.Duration{rec.FirstToken}
	}
	return nil
}

// run applies the events in time order, moving the runner's clock (and
// so its integrals over the window) before each instant's events.
func (p *recordReplay) run() {
	r := p.r
	for _, ev := range p.evs {
		r.advance(ev.at)
		rec := &p.recs[ev.rec]
		switch ev.kind {
		case queued:
			r.clientQ = append(r.clientQ, int32(ev.rec))
		case sent:
			r.clientHead++
		case held:
			r.hold(&r.reps[rec.Replica], +1)
			r.sysIn()
		case released:
			r.hold(&r.reps[rec.Replica], -1)
			r.sysOut()
		case token:
			r.tokens += r.inWindow(ev.at, 0, 1)
		case gatewayIn:
			r.gwHold(+1)
		case gatewayOut:
			r.gwHold(-1)
		case ended:
			r.lastEnd = max(r.lastEnd, ev.at)
			r.tally(rec, r.classes.of(rec.Class))
		}
	}
}

// stop brings the runner to the instant the run stopped, with what it
// knew then: whether the backlog passed its bound.
func (p *recordReplay) stop() {
	r := p.r
	at, unfinished := Never, 0
	for i := range p.recs {
		rec := &p.recs[i]
		if rec.Status == StatusUnfinished {
			unfinished++
			at = rec.Finish
		}
	}
	if unfinished == 0 {
		at = p.lastEvent()
	}
	// Only an overload stops a run holding more than MaxBacklog requests.
	r.overloaded = r.maxHeld > 0 && unfinished > r.maxHeld
	r.col.s.Stopped = max(at, 0)
	r.advance(max(at, r.now))
}

// lastEvent is the last instant of a run that left nothing unfinished.
func (p *recordReplay) lastEvent() time.Duration {
	r, last := p.r, time.Duration(0)
	for i := range p.recs {
		last = max(last, p.recs[i].Finish)
	}
	if r.cfg.Horizon > 0 {
		return max(last, r.cfg.Horizon)
	}
	for i := range p.recs {
		rec := &p.recs[i]
		last = max(last, rec.Scheduled)
		if r.cfg.Timeout > 0 && rec.Sent && rec.Status != StatusRejected && rec.Replica != Unrouted {
			last = max(last, rec.Arrival+r.cfg.Timeout)
		}
	}
	return last
}

// analysisFiles are sim's sources that turn a run's records into its
// Summary (summary.go: the collector and Summarize; window.go: the window,
// what is integrated over it and the warm-up; sample.go: the samples the
// collector keeps; pools_summary.go: a disaggregated fleet's;
// tiers_summary.go: the KV tiers'; scale_summary.go: an autoscaled
// fleet's replica-hours and timeline), registered with the analysis revision
// (analysis.AnalysisRevision). What a run simulates (the engine, the
// runner's events) is not analysis: the build's VCS revision covers it.
//
//go:embed summary.go window.go sample.go pools_summary.go tiers_summary.go scale_summary.go
var analysisFiles embed.FS

var _ = revision.Register("github.com/servesim/servesim/sim", analysisFiles,
	"summary.go", "window.go", "sample.go", "pools_summary.go", "tiers_summary.go", "scale_summary.go")
