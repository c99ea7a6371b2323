package sim

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// disaggregated is a fleet of decoders Atlas replicas behind RoundRobin
// and a prefill pool of prefillers, every request prefilled remotely over
// link.
func disaggregated(decoders, prefillers int, link Link) Config {
	return Config{Fleet: Fleet{Replicas: Copies(decoders, ReplicaConfig{}),
		Prefill: PrefillPool{Replicas: Copies(prefillers, ReplicaConfig{}), Link: link}}}
}

// recordsOf runs cfg on src and returns every record as text, in the
// order they ended, with the summary.
func recordsOf(t *testing.T, cfg Config, src workload.Source) ([]byte, []Record, Summary) {
	t.Helper()
	var buf bytes.Buffer
	var recs []Record
	sum, err := Run(cfg, src, ObserverFunc(func(r *Record) {
		fmt.Fprintf(&buf, "%+v\n", *r)
		k := *r
		k.Tokens = append([]time.Duration(nil), r.Tokens...) // the runner reuses its slice
		recs = append(recs, k)
	}))
	require.NoError(t, err)
	return buf.Bytes(), recs, sum
}

// With the decider off, a disaggregated fleet is its decode pool
// co-located: every request is prefilled where it is decoded, and the
// idle prefill pool changes nothing, byte for byte (under prefix
// sharing, timeouts, KV pressure and a window that stops runs in flight;
// the decode replicas run without their fast paths, engine.Config.RemoteKV,
// so this is also the fast paths against the slow ones).
func TestNeverRemoteIsCoLocated(t *testing.T) {
	for _, kv := range []int{0, 900} {
		t.Run(fmt.Sprintf("KVBlocks %d", kv), func(t *testing.T) {
			base := Config{Timeout: 20 * time.Second, Window: Window{Warmup: 20 * time.Second, Horizon: 200 * time.Second},
				Fleet: Fleet{Replicas: Copies(3, ReplicaConfig{Engine: engine.Config{KVBlocks: kv}}), Router: PrefixAffinity{}}}
			src, err := sharedWorkload(5, 3)
			require.NoError(t, err)
			want, wantRecs, wantSum := recordsOf(t, base, src)
			cfg := base
			cfg.Fleet.Prefill = PrefillPool{Replicas: Copies(2, ReplicaConfig{}), Decider: NeverRemote{}, Link: Link{Bandwidth: 1e9}}
			src, err = sharedWorkload(5, 3)
			require.NoError(t, err)
			got, _, sum := recordsOf(t, cfg, src)
			sameBytes(t, want, got)
			require.NotEmpty(t, wantRecs)
			assert.Equal(t, wantSum.Goodput, sum.Goodput)
			assert.Equal(t, fmt.Sprint(wantSum.TTFT), fmt.Sprint(sum.TTFT))
			assert.Equal(t, fmt.Sprint(wantSum.ITL), fmt.Sprint(sum.ITL))
			require.NotNil(t, sum.Disagg)
			assert.Zero(t, sum.Disagg.Remote)
			assert.Equal(t, sum.Offered, sum.Disagg.Local)
			assert.Zero(t, sum.Disagg.Bytes)
			assert.Zero(t, sum.Disagg.PrefillBusy, "the prefill pool stood idle")
			if kv > 0 {
				assert.Positive(t, wantSum.Preempt, "the small cache preempts")
			}
		})
	}
}

// With one prompt at a time, a prefill replica is a single server of
// deterministic service: a prompt's prefill step, S = 20 + 0.035·n ms.
// TTFT ends at the prefill replica, so its mean is the M/D/1 wait plus S
// (Pollaczek–Khinchine: Wq = ρ·S / (2(1−ρ))), as DistServe analyses its
// prefill instance, whatever the decode pool and the link then do.
func TestPrefillPoolTTFTIsMD1(t *testing.T) {
	t.Parallel()
	const n = 100_000
	s := costmodel.Frozen{}.PrefillTime(1000)
	require.Equal(t, 55*time.Millisecond, s)
	for _, rho := range []float64{0.5, 0.8} {
		cfg := disaggregated(4, 1, Link{Bandwidth: 25e9, Latency: time.Millisecond})
		cfg.Fleet.Prefill.Replicas[0].Engine.MaxSeqs = 1
		lambda := rho / s.Seconds()
		sum, err := Run(cfg, poisson(t, 1, lambda, n, workload.Fixed(1000, 4)), nil)
		require.NoError(t, err)
		require.Equal(t, n, sum.Count(StatusOK), "%+v", sum.Status)
		want := (rho*s.Seconds()/(2*(1-rho)) + s.Seconds()) * 1e3
		t.Logf("rho %v: M/D/1 mean TTFT %.2f ms, simulated %.2f ms; prefill replica busy %.3f", rho, want, sum.TTFT.Mean, sum.Disagg.PrefillBusy)
		assert.InEpsilon(t, want, sum.TTFT.Mean, 0.02, "rho %v: M/D/1 TTFT %.2f ms, simulated %.2f ms", rho, want, sum.TTFT.Mean)
		assert.InDelta(t, rho, sum.Disagg.PrefillBusy, 0.02, "the prefill replica is busy ρ of the time")
		assert.Equal(t, n, sum.Disagg.Remote)
		assertLittle(t, sum)
	}
}

// A decode pool's steps hold no prefill: after a remote request's first
// decode, every gap is the pure-decode step, 45 ms to the microsecond,
// and every step a decode replica runs is decode-only.
func TestDecodePoolITLIsThePureDecodeStep(t *testing.T) {
	cfg := disaggregated(2, 2, Link{Bandwidth: 50e9, Latency: 10 * time.Microsecond})
	cfg.KeepTokens = true
	var chunks, decodeSteps int
	obs := stepCounter{decoders: 2, chunks: &chunks, steps: &decodeSteps}
	var recs []Record
	obs.each = func(r *Record) {
		k := *r
		k.Tokens = append([]time.Duration(nil), r.Tokens...) // the runner reuses its slice
		recs = append(recs, k)
	}
	sum, err := Run(cfg, poisson(t, 3, 6, 3000, workload.Fixed(2000, 100)), obs)
	require.NoError(t, err)
	require.Equal(t, 3000, sum.Count(StatusOK))
	assert.Positive(t, decodeSteps)
	assert.Zero(t, chunks, "no decode-pool step holds a prefill chunk")
	gaps := 0
	for _, r := range recs {
		require.True(t, r.Remote, "request %d", r.ID)
		require.Less(t, r.Replica, 2, "request %d ends at its decode replica", r.ID)
		require.Len(t, r.Tokens, 100)
		for i := 2; i < len(r.Tokens); i++ {
			require.Equal(t, costmodel.AtlasDecodeStep, r.Tokens[i]-r.Tokens[i-1], "request %d, gap %d", r.ID, i)
			gaps++
		}
		// The first gap holds the wait for blocks, the transfer and the
		// decode replica's first step.
		require.GreaterOrEqual(t, r.Tokens[1]-r.Tokens[0], r.KVWait+r.Transfer+time.Microsecond, "request %d", r.ID)
	}
	assert.Equal(t, 3000*98, gaps)
	t.Logf("%d decode-pool gaps after the first, all 45 ms; %d decode-pool steps, %d prefill chunks in them", gaps, decodeSteps, chunks)
}

// stepCounter counts the decode pool's steps and the prefill chunks they
// held, and hands each record to each.
type stepCounter struct {
	decoders      int
	chunks, steps *int
	each          func(*Record)
}

func (c stepCounter) Observe(r *Record) { c.each(r) }

func (c stepCounter) ObserveStep(s *Step) {
	if s.Replica >= c.decoders {
		return
	}
	for one := range s.All() {
		*c.steps++
		*c.chunks += len(one.Prefill)
	}
}

// Every remotely prefilled request moves exactly its prompt's KV bytes
// once (no prefix cache hits: its prompt shares nothing), and the links
// are work-conserving: the bytes they moved are their bandwidth times
// the time they were moving bytes (utilisation = bytes / (bandwidth ×
// window) = the busy share). Alone on its link, a transfer takes its
// latency plus its bytes over the bandwidth, to the nanosecond above.
func TestTransferConservesBytes(t *testing.T) {
	for _, sharing := range []LinkSharing{LinkFIFO, LinkFair} {
		t.Run(sharing.String(), func(t *testing.T) {
			link := Link{Bandwidth: 2e9, Latency: 2 * time.Millisecond, Sharing: sharing}
			cfg := disaggregated(3, 2, link) // an open window: every transfer lands inside it
			_, recs, sum := recordsOf(t, cfg, poisson(t, 5, 4, 3000, workload.Independent{Input: workload.Uniform{Center: 2000, RangeRatio: 0.8}, Output: workload.Uniform{Center: 100, RangeRatio: 0.8}}))
			d := sum.Disagg
			require.NotNil(t, d)
			var bytes float64
			alone := 0
			for _, r := range recs {
				require.True(t, r.Remote)
				if r.Transfer == 0 {
					continue // ended before its transfer landed
				}
				b := float64(r.Input) * costmodel.AtlasKVBytesPerToken
				bytes += b
				if r.Transfer == link.Latency+time.Duration(math.Ceil(b/link.Bandwidth*1e9)) {
					alone++
				}
				require.GreaterOrEqual(t, r.Transfer, link.Latency+time.Duration(b/link.Bandwidth*1e9), "request %d", r.ID)
			}
			assert.InEpsilon(t, bytes, d.Bytes, 1e-9, "every landed transfer moved its prompt's bytes once")
			assert.InEpsilon(t, d.LinkUtilisation, d.LinkBusy, 1e-6, "work-conserving links")
			assert.InEpsilon(t, bytes/(link.Bandwidth*sum.Window.Seconds()*2), d.LinkUtilisation, 1e-6)
			assert.Greater(t, alone, len(recs)/2, "most transfers found their link free")
			t.Logf("%s: %.1f GB moved, link utilisation %.3f, %d of %d transfers alone", sharing, d.Bytes/1e9, d.LinkUtilisation, alone, len(recs))
		})
	}
}

// A decode replica that cannot find blocks for a prompt's KV makes the
// transfer wait; the wait shows in the request's first gap, the ITL its
// user sees after the first token.
func TestKVWaitIsInTheFirstGap(t *testing.T) {
	cfg := disaggregated(1, 2, Link{})
	cfg.Fleet.Replicas[0].Engine.KVBlocks = 400 // 6,400 tokens: three 2,100-token sequences
	cfg.KeepTokens = true
	_, recs, sum := recordsOf(t, cfg, poisson(t, 7, 3, 400, workload.Fixed(2000, 100)))
	waited := 0
	for _, r := range recs {
		require.Equal(t, StatusOK, r.Status)
		require.Zero(t, r.Transfer, "an instantaneous link")
		if r.KVWait > 0 {
			waited++
		}
		require.GreaterOrEqual(t, r.Tokens[1]-r.Tokens[0], r.KVWait, "request %d", r.ID)
	}
	assert.Greater(t, waited, 100, "requests waited for blocks")
	assert.Greater(t, sum.Disagg.FirstITL.Max, sum.Disagg.KVWait.Max)
	assert.Greater(t, sum.Disagg.FirstITL.Mean, sum.ITL.Median)
}

// PrefixThreshold is llm-d's rule: remote when the uncached suffix at the
// decode replica reaches the threshold. A prompt of 4,596 tokens whose
// 500-token suffix is never cached goes remote at a threshold of 1 and
// never at one above its length; in between, the share falls as the
// threshold rises.
func TestPrefixThresholdDecides(t *testing.T) {
	share := func(threshold int) float64 {
		cfg := Config{Window: Window{Warmup: 10 * time.Second, Horizon: 100 * time.Second},
			Fleet: Fleet{Replicas: Copies(3, ReplicaConfig{}), Router: PrefixAffinity{},
				Prefill: PrefillPool{Replicas: Copies(1, ReplicaConfig{}), Decider: PrefixThreshold{NonCachedTokens: threshold}}}}
		src, err := sharedWorkload(6, 11)
		require.NoError(t, err)
		sum, err := Run(cfg, src, nil)
		require.NoError(t, err)
		return sum.Disagg.RemoteShare
	}
	assert.Equal(t, 1.0, share(1))
	assert.Equal(t, 0.0, share(0), "llm-d: a threshold of 0 disaggregates nothing")
	assert.Equal(t, 0.0, share(4597))
	mid, high := share(1000), share(4000)
	assert.Greater(t, mid, 0.0)
	assert.Less(t, mid, 1.0)
	assert.GreaterOrEqual(t, mid, high)
	t.Logf("remote share at 1,000 tokens %.3f, at 4,000 %.3f", mid, high)
}

// A disaggregated fleet runs the same bytes fast and step by step, with
// every engine's invariants checked after every step, under timeouts,
// a client cap and KV pressure.
func TestDisaggregatedFastIsStepwise(t *testing.T) {
	t.Parallel()
	for _, dec := range []Decider{AlwaysRemote{}, PrefixThreshold{NonCachedTokens: 600}} {
		cfg := disaggregated(2, 1, Link{Bandwidth: 1e9, Latency: time.Millisecond, Sharing: LinkFair})
		cfg.Fleet.Prefill.Decider = dec
		cfg.Fleet.Replicas[1].Engine.KVBlocks = 500
		cfg.Timeout = 10 * time.Second
		cfg.Window = Window{Warmup: 2 * time.Second, Horizon: 15 * time.Second}
		var reqs list
		src, err := sharedWorkload(5, 2)
		require.NoError(t, err)
		for {
			r, err := src.Next()
			if err != nil || r.Arrival > 20*time.Second {
				break
			}
			reqs = append(reqs, r)
		}
		run := fastEqualsStepwise(t, cfg, reqs)
		assert.Positive(t, run.sum.Count(StatusTimedOut), "%T: timeouts", dec)
		assert.Positive(t, run.sum.Count(StatusOK), "%T: served", dec)
		assert.Positive(t, run.sum.Disagg.Remote, "%T: remote prefills", dec)
	}
}

// A nonsense prefill pool is refused, naming the field.
func TestPrefillPoolValidation(t *testing.T) {
	cases := map[string]PrefillPool{
		"Fleet.Prefill.Replicas is empty":           {Replicas: []ReplicaConfig{}},
		"Fleet.Prefill.Link":                        {Replicas: Copies(1, ReplicaConfig{}), Link: Link{Bandwidth: -1}},
		"Fleet.Prefill.KVBytesPerToken":             {Replicas: Copies(1, ReplicaConfig{}), KVBytesPerToken: math.NaN()},
		"MaxKVBytesPerToken":                        {Replicas: Copies(1, ReplicaConfig{}), KVBytesPerToken: 1e300}, // its transfers' bytes overflowed int64
		"Fleet.Prefill.Replicas[0].Speculation":     {Replicas: []ReplicaConfig{{Speculation: Speculation{Tokens: 2, Acceptance: 0.5}}}},
		"Fleet.Prefill.Replicas[0]: engine: MaxSeq": {Replicas: []ReplicaConfig{{Engine: engine.Config{MaxSeqs: -1}}}},
	}
	for want, p := range cases {
		err := Config{Fleet: Fleet{Prefill: p}}.Validate()
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
	err := Config{Fleet: Fleet{Prefill: PrefillPool{Replicas: Copies(1, ReplicaConfig{})}},
		Gateway: Gateway{Limit: ConcurrencyLimit{PerReplica: 2}}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not modelled with a prefill pool")
}

// cacheRecorder routes every request to replica 0 and notes what the
// view says replica 0 caches of it.
type cacheRecorder struct{ cached map[uint64]int }

func (c cacheRecorder) Route(r *workload.Request, v *View) int {
	c.cached[r.ID] = v.CachedPrefix(0)
	return 0
}

// A disaggregated fleet's decider reads the arrival its router just
// routed, and the next arrival's router reads its own: every replica is
// warmed with prompt X's 512 shared tokens; arrival 0 sends a 600-token
// prompt that begins with X, and arrival 1 one that begins with Y,
// sharing nothing, so the router must see X's 512 tokens cached (32
// blocks of 16) and none of Y's. (When the decider counted the arrival routed
// before it asked, the chain it keyed was marked as the next arrival's,
// and arrival 1's router read X's keys.)
func TestDeciderAndNextRouterReadTheirOwnArrival(t *testing.T) {
	ids := func(base uint64) []uint64 {
		out := make([]uint64, 32)
		for i := range out {
			out[i] = base + uint64(i)
		}
		return out
	}
	x, y := ids(1000), ids(2000)
	rec := cacheRecorder{cached: map[uint64]int{}}
	for _, dec := range []Decider{PrefixThreshold{NonCachedTokens: 100}, AlwaysRemote{}} {
		clear(rec.cached)
		cfg := Config{Warm: []workload.Request{{InputTokens: 513, OutputTokens: 1, PrefixHashes: x, PrefixBlockTokens: 16}},
			Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: rec,
				Prefill: PrefillPool{Replicas: Copies(1, ReplicaConfig{}), Decider: dec}}}
		reqs := list{
			{ID: 0, Arrival: time.Second, InputTokens: 600, OutputTokens: 10, PrefixHashes: x, PrefixBlockTokens: 16},
			{ID: 1, Arrival: 2 * time.Second, InputTokens: 600, OutputTokens: 10, PrefixHashes: y, PrefixBlockTokens: 16},
		}
		_, err := Run(cfg, &reqs, nil)
		require.NoError(t, err)
		assert.Equal(t, map[uint64]int{0: 512, 1: 0}, rec.cached, "%T", dec)
	}
}

// A replica's served, the handoff's test of what its decode replica
// serves, is its engine's Config.ServedOutput, with MaxModelLen set or
// taken from the KV cache's capacity.
func TestReplicaServedIsServedOutput(t *testing.T) {
	for _, ec := range []engine.Config{{}, {MaxModelLen: 4096}, {KVBlocks: 100}, {KVBlocks: 100, MaxModelLen: 1000}} {
		var rep replica
		require.NoError(t, rep.init(0, ReplicaConfig{Engine: ec}, SLO{}))
		cfg := rep.eng.Config()
		for _, in := range []int{0, 1, 999, 1000, 1599, 1600, 1601, 4095, 4096, 4097, 1 << 20} {
			for _, out := range []int{0, 1, 2, 500, 1 << 20} {
				require.Equal(t, cfg.ServedOutput(in, out), rep.served(in, out), "%+v: input %d, output %d", ec, in, out)
			}
		}
	}
}

// A decode replica's run continued at its step end admits the one
// request whose KV landed meanwhile (engine.Runner.Continue; the
// engine's continueLanded, the sim's aloneAt), and gives the
// bytes step by step gives, on the Disagg regime's small workload. The joins are
// counted, so that a path turned off fails: at least a quarter of the
// regime's requests join so (about 0.4 a request when it was written).
func TestContinueAdmitsLandedIsStepwise(t *testing.T) {
	for _, rg := range regimes {
		if rg.name != "Disagg" {
			continue
		}
		cfg, src := rg.build(t, rg.small)
		_, r := fastIsStepwiseFrom(t, cfg, src)
		t.Logf("%d requests, %d continued moves, %d admitted a landed request, %d two or more, %d reserved a waiting one too", rg.small, r.continued, r.landJoins, r.landJoinsMany, r.landReserves)
		require.GreaterOrEqual(t, r.landJoins, rg.small/4, "continued runs that admit a landed request")
		require.Positive(t, r.landJoinsMany, "continued runs that admit two or more landed requests")
		require.Positive(t, r.landReserves, "continued runs that admit a landed request and reserve a waiting one")
	}
}

// A landing's step end that shares its instant with another event (an
// arrival, a landing, another replica's step end) is not continued with
// the landed request admitted (aloneAt): a plan that admits cannot be cut
// at its own instant, and an event at that instant may cut it. Arrivals
// on a grid of the 45 ms decode step, one prompt length and a link
// without latency put every decode replica's step ends at one phase, so
// such instants are common (a link of 1e18 B/s, a transfer under a
// nanosecond, with fair sharing, so that simultaneous transfers land
// together); the runs must still give Stepwise's bytes, and both the
// joins and the declines are counted, so that a guard turned off
// (aloneAt always true) fails here — by its count only: with the guard
// off these runs give Stepwise's bytes too, so no run found so far needs
// it; it stays because Truncate refuses to cut a step that admits.
func TestLandedJoinWaitsForItsInstantAlone(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: LeastLoaded{},
		Prefill: PrefillPool{Replicas: Copies(2, ReplicaConfig{}), Router: LeastLoaded{},
			Link: Link{Bandwidth: 1e18, Sharing: LinkFair}}}}
	_, r := fastIsStepwiseOn(t, cfg, decodeGrid(47, 300))
	t.Logf("%d admitted a landed request (%d two or more), %d step ends with something else at their instant", r.landJoins, r.landJoinsMany, r.notAlone)
	require.Positive(t, r.landJoins, "continued runs that admit a landed request")
	require.Positive(t, r.notAlone, "landings' step ends that share their instant")
}

// TestLinkLandingAtOnceKeepsTheReservingStep runs a disaggregated fleet
// over links from a real one to one so fast that a fair-shared
// transfer's end rounds to its start (10²¹ bytes a second: 2,000 tokens
// of Atlas's KV in under a picosecond), both sharings: the fast run is
// Stepwise byte for byte, and neither panics nor fails. A request handed
// to a decode replica inside a run used to be reserved at the run's next
// step start (reserveInRun), its transfer landing at that very instant
// and cutting the run there (Truncate at the landing), dropping the step
// that had reserved and taken its blocks: the strict engine's rule
// no-cut-behind-sync, or, unchecked, an error out of Run. handoff now
// cuts the run at the Add over a link whose transfer may land at once
// (Link.landsAtOnce), and defers the reservation over any other, which
// the row of a real link asserts. The smallest case is the second row's
// table: one decode replica, one prefill replica, two requests.
func TestLinkLandingAtOnceKeepsTheReservingStep(t *testing.T) {
	t.Parallel()
	fleets := []struct {
		name     string
		dec, pre int
		reqs     []workload.Request
	}{
		{"4+2/300", 4, 2, decodeGrid(47, 300)},
		{"1+1/2", 1, 1, []workload.Request{
			{ID: 0, Arrival: 0, InputTokens: 2000, OutputTokens: 200},
			{ID: 1, Arrival: 135 * time.Millisecond, InputTokens: 2000, OutputTokens: 200}}},
	}
	for _, f := range fleets {
		for _, bw := range []float64{0, 900e9, 1e18, 1e20, 1e21, math.MaxFloat64} {
			for _, sh := range []LinkSharing{LinkFIFO, LinkFair} {
				link := Link{Bandwidth: bw, Sharing: sh}
				t.Run(fmt.Sprintf("%s/%g/%v", f.name, bw, sh), func(t *testing.T) {
					cfg := Config{Fleet: Fleet{Replicas: Copies(f.dec, ReplicaConfig{}), Router: LeastLoaded{},
						Prefill: PrefillPool{Replicas: Copies(f.pre, ReplicaConfig{}), Router: LeastLoaded{}, Link: link}}}
					fast, _ := fastIsStepwiseOn(t, cfg, f.reqs)
					atOnce := link.landsAtOnce(costmodel.AtlasKVBytesPerToken)
					require.Equal(t, bw == 0 || bw >= 1e18, atOnce, "links whose one-token transfer takes a nanosecond or less")
					if !atOnce && f.dec == 4 {
						require.Positive(t, fast.runReserves, "reservations deferred inside runs over a real link")
					}
				})
			}
		}
	}
}

// TestLandsAtOnceCoversTheLinks holds Link.landsAtOnce to the links'
// arithmetic: over a link it says no to, a transfer of one token's KV,
// the least a reservation moves, started alone or beside others, never
// lands at the instant it starts; and the link that broke handoff, a
// fair one at 10²¹ bytes a second, does land Atlas's 2,000-token prompt
// at once, so the guard is needed.
func TestLandsAtOnceCoversTheLinks(t *testing.T) {
	const at = 5 * time.Millisecond
	for _, kv := range []float64{1e-9, 0.5, 1, 3, 1000, costmodel.AtlasKVBytesPerToken, MaxKVBytesPerToken} {
		for _, bw := range []float64{MinLinkBandwidth, 1e9, 900e9, 1e12, 1e13, 1e15, 1e17, 1e18, 1e20, 1e21, 1e25} {
			for _, sh := range []LinkSharing{LinkFIFO, LinkFair} {
				l := Link{Bandwidth: bw, Sharing: sh}
				if l.landsAtOnce(kv) {
					continue
				}
				for _, others := range []int{0, 1, 5} {
					tr := newTransfers(l, 0, Unbounded)
					for i := 0; i < others; i++ {
						tr.start(at, int32(i+1), int64(math.Ceil(2000*kv)))
					}
					tr.start(at, 0, int64(math.Ceil(kv)))
					next, ok := tr.next()
					require.True(t, ok)
					require.Greater(t, next, at, "kv %g, %v, %d others: a transfer landsAtOnce says no to lands at once", kv, l, others)
				}
			}
		}
	}
	l := Link{Bandwidth: 1e21, Sharing: LinkFair}
	require.True(t, l.landsAtOnce(costmodel.AtlasKVBytesPerToken))
	tr := newTransfers(l, 0, Unbounded)
	tr.start(at, 0, int64(2000*costmodel.AtlasKVBytesPerToken))
	next, ok := tr.next()
	require.True(t, ok)
	require.Equal(t, at, next, "a fair transfer of under a picosecond lands at its start")
}

// decodeGrid is n requests of 2,000/200 tokens arriving on the grid of
// the 45 ms decode step, 0 to 3 steps apart (PCG(seed, 1)), so that
// decode replicas' step ends share their instants.
func decodeGrid(seed uint64, n int) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 1))
	reqs := make([]workload.Request, n)
	at := time.Duration(0)
	for i := range reqs {
		at += time.Duration(rng.IntN(4)) * 45 * time.Millisecond
		reqs[i] = workload.Request{ID: uint64(i), Arrival: at, InputTokens: 2000, OutputTokens: 200}
	}
	return reqs
}

// fastIsStepwiseOn runs reqs through cfg fast and Stepwise, requires
// the same bytes, and returns the fast run and its runner.
func fastIsStepwiseOn(t *testing.T, cfg Config, reqs []workload.Request) (scenarioRun, *runner) {
	t.Helper()
	src := func() workload.Source {
		s, err := workload.NewSlice(reqs)
		require.NoError(t, err)
		return s
	}
	return fastIsStepwiseFrom(t, cfg, src)
}

// fastIsStepwiseFrom runs src's requests through cfg fast and Stepwise
// (a fresh source each), requires the same bytes, and returns the fast
// run and its runner.
func fastIsStepwiseFrom(t *testing.T, cfg Config, src func() workload.Source) (scenarioRun, *runner) {
	t.Helper()
	fast, r, err := runSourceScenario(cfg, src())
	require.NoError(t, err)
	step := cfg
	step.Stepwise = true
	slow, _, err := runSourceScenario(step, src())
	require.NoError(t, err)
	sameBytes(t, slow.text, fast.text)
	return fast, r
}

// TestContinueAdmitsLandedTogetherIsStepwise runs the Disagg regime's
// fleet with decode replicas whose step price is flat to three decodes
// and rises past them (a model that reads no decode context), so that a
// step end where two or more requests landed together (continueLanded
// with m landed) meets batches where n+m decodes are no longer priced
// as one: the run must give Stepwise's bytes, and some moves must admit
// two or more landed requests.
func TestContinueAdmitsLandedTogetherIsStepwise(t *testing.T) {
	many := 0
	for _, rg := range regimes {
		if rg.name != "Disagg" {
			continue
		}
		for _, flat := range []int{19, 20, 21, 22, 24} {
			cfg, src := rg.build(t, rg.small)
			cfg.Fleet.Replicas = Copies(len(cfg.Fleet.Replicas), ReplicaConfig{Model: steppedModel{flat: flat}})
			_, r := fastIsStepwiseFrom(t, cfg, src)
			many += r.landJoinsMany
		}
	}
	t.Logf("%d continued moves admitted two or more landed requests", many)
	require.Greater(t, many, 10)
}

// steppedModel prices a step at 40 ms, and 8 ms more for each decode
// past flat, with 30 µs a prompt token: it reads no decode context.
type steppedModel struct{ flat int }

func (m steppedModel) StepTime(b costmodel.Batch) time.Duration {
	d := 40*time.Millisecond + time.Duration(max(0, len(b.Decode)-m.flat))*8*time.Millisecond
	for _, c := range b.Prefill {
		d += time.Duration(c.NewTokens) * 30 * time.Microsecond
	}
	return d
}

func (steppedModel) ContextFree() bool        { return true }
func (steppedModel) DecodeSum() bool          { return true }
func (steppedModel) PrefillContextFree() bool { return true }

// TestContinueLandedReservesIsStepwise runs the Disagg regime's fleet
// with decode replicas of a few hundred blocks (a prompt and its answer
// take 139), so that a step end where a request landed while another
// Remote request waits (continueLanded's waiting loop) meets one whose
// blocks do not fit, as well as ones that reserve: the runs must give
// Stepwise's bytes, and some moves must reserve.
func TestContinueLandedReservesIsStepwise(t *testing.T) {
	reserves := 0
	for _, rg := range regimes {
		if rg.name != "Disagg" {
			continue
		}
		for _, blocks := range []int{2800, 2900, 3000, 3200} {
			cfg, src := rg.build(t, rg.small)
			cfg.Fleet.Replicas = Copies(len(cfg.Fleet.Replicas), ReplicaConfig{Engine: engine.Config{KVBlocks: blocks}})
			_, r := fastIsStepwiseFrom(t, cfg, src)
			t.Logf("%d blocks: %d continued moves, %d admitted a landed request, %d reserved a waiting one too", blocks, r.continued, r.landJoins, r.landReserves)
			reserves += r.landReserves
		}
	}
	require.Positive(t, reserves, "continued runs that admit a landed request and reserve a waiting one")
}
