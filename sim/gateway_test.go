package sim

import (
	"math"
	"testing"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The token bucket against its theory. With MaxTokens = TokensPerFill =
// p, every fill interval [kI, (k+1)I) starts with exactly p tokens
// (min(p, leftover + p) = p), so the interval admits min(N_k, p) of its
// N_k arrivals, and N_k ~ Poisson(λI) are independent (disjoint
// increments of a Poisson process). Over K intervals the admitted count
// is a sum of K i.i.d. terms of mean μ = E[min(N, p)] and variance σ²:
// it lies in Kμ ± 4σ√K but for a chance of 6·10⁻⁵, never above Kp, and
// the throttled are the rest, N − min(N, p). At λ = 2r, μ is within
// 0.1 % of p: offered above the bucket rate r, the bucket admits r in
// the long run and throttles λ − r.
func TestTokenBucketAdmitsItsRate(t *testing.T) {
	const (
		p      = 10
		lambda = 20.0 // requests/s, 2 × the bucket's 10/s
		k      = 400  // fill intervals of 1 s measured
	)
	tb := TokenBucket{MaxTokens: p, TokensPerFill: p, FillInterval: time.Second}
	require.InDelta(t, 10, tb.Rate(), 1e-12)
	// μ and σ² of min(N, p), N ~ Poisson(λI), summed exactly.
	var mu, m2 float64
	pn := math.Exp(-lambda)
	for n := 0; n < 200; n++ {
		x := float64(min(n, p))
		mu += x * pn
		m2 += x * x * pn
		pn *= lambda / float64(n+1)
	}
	sigma2 := m2 - mu*mu
	require.InEpsilon(t, p, mu, 0.001, "at λ = 2r the bucket admits its rate but for %.3f a fill", p-mu)

	cfg := Config{
		Fleet:   Fleet{Replicas: Copies(4, ReplicaConfig{})}, // the replicas take what passes at once
		Gateway: Gateway{Bucket: tb},
		Window:  Window{Horizon: k * time.Second, Drain: time.Second},
	}
	admitted := 0
	sum, err := Run(cfg, poisson(t, 3, lambda, int(lambda*k*1.2), workload.Fixed(32, 2)), ObserverFunc(func(r *Record) {
		if r.Measured && r.Status != StatusThrottled {
			admitted++
		}
	}))
	require.NoError(t, err)
	half := 4 * math.Sqrt(k*sigma2)
	assert.InDelta(t, k*mu, float64(admitted), half, "admitted %d in %d s: theory %.1f ± %.1f", admitted, k, k*mu, half)
	assert.LessOrEqual(t, admitted, k*p, "never more than the fills give")
	assert.Equal(t, sum.Offered, admitted+sum.Count(StatusThrottled), "the throttled are the rest")
	assert.Equal(t, sum.Offered, sum.Good+sum.Misses.Total())
	assert.Equal(t, sum.Count(StatusThrottled), sum.Misses.Gateway)
	// The rates: admitted ≈ r, throttled ≈ λ − r (the offered count's own
	// Poisson noise, 4√(λK), on top of the admitted's).
	assert.InDelta(t, lambda*k-k*mu, float64(sum.Count(StatusThrottled)), half+4*math.Sqrt(lambda*k))
}

// Envoy's timer granularity: the bucket starts full, fills only at whole
// intervals, and never holds more than MaxTokens.
func TestTokenBucketFillsAtIntervals(t *testing.T) {
	b := newBucket(TokenBucket{MaxTokens: 3, TokensPerFill: 2, FillInterval: 100 * time.Millisecond})
	took := func(at time.Duration, n int) (got int) {
		for range n {
			if b.take(at) {
				got++
			}
		}
		return got
	}
	assert.Equal(t, 3, took(0, 5), "starts full: a burst of MaxTokens")
	assert.Equal(t, 0, took(99*time.Millisecond, 1), "no fill before the first interval")
	assert.Equal(t, 2, took(100*time.Millisecond, 5), "one fill of TokensPerFill")
	assert.Equal(t, 3, took(time.Second, 5), "ten fills capped at MaxTokens")
}

// The concurrency limit never lets a replica hold more than its cap;
// Little's law holds on the gateway's queue (its time-average length is
// the rate of requests admitted to it times their mean wait); an expired
// request waited exactly the TTL.
func TestConcurrencyLimitCapsAndLittle(t *testing.T) {
	const limit = 6
	cfg := Config{
		Fleet:   Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: LeastLoaded{}},
		Gateway: Gateway{Limit: ConcurrencyLimit{PerReplica: limit, Queue: 15, TTL: 4 * time.Second}},
		Window:  Window{Warmup: 20 * time.Second, Horizon: 620 * time.Second},
	}
	var admitted int
	var wait time.Duration
	expired := 0
	held := make([]int, 2)
	worst := 0
	obs := &capObserver{rec: func(r *Record) {
		if r.Status == StatusExpired {
			expired++
			assert.Equal(t, cfg.Gateway.Limit.TTL, r.Finish-r.Arrival, "request %d", r.ID)
		}
		if r.Measured && r.Status != StatusQueueFull {
			admitted++
			wait += r.GatewayWait
		}
	}, step: func(s *Step) {
		held[s.Replica] = s.Waiting + s.Running
		worst = max(worst, held[s.Replica])
	}}
	// Offered 1.4× what two replicas at 6 requests each serve: the queue
	// fills, some expire, some find it full.
	sum, err := Run(cfg, poisson(t, 5, 3, 3000, workload.Fixed(1500, 200)), obs)
	require.NoError(t, err)
	assert.LessOrEqual(t, worst, limit, "a replica held more than the limit")
	assert.Equal(t, limit, worst, "the limit binds")
	assert.Positive(t, expired)
	assert.Positive(t, sum.Count(StatusQueueFull))
	window := cfg.Horizon - cfg.Warmup
	lambda := float64(admitted) / window.Seconds()
	w := wait.Seconds() / float64(admitted)
	t.Logf("gateway queue %.3f, λ %.3f/s × W %.3f s = %.3f", sum.GatewayQueue, lambda, w, lambda*w)
	assert.InEpsilon(t, lambda*w, sum.GatewayQueue, 0.03, "Little's law on the gateway queue")
}

// capObserver sees records and steps.
type capObserver struct {
	rec  func(*Record)
	step func(*Step)
}

func (o *capObserver) Observe(r *Record)   { o.rec(r) }
func (o *capObserver) ObserveStep(s *Step) { o.step(s) }

// Shedding reads the router's signal. With fresh signals a request is
// shed exactly when the replica's waiting queue exceeds the threshold at
// its send: the requests admitted before it (arrived earlier) and not
// yet scheduled (FirstScheduled at or after its arrival: a step is
// planned after the arrivals of its instant), which the records
// reconstruct. With a 5 s stale signal the gateway sheds by what it last
// saw: some decisions differ from that rule.
func TestShedBySaturationSignal(t *testing.T) {
	base := Config{
		Engine:  engine.Config{MaxSeqs: 4},
		Gateway: Gateway{Shed: Saturation{QueueDepth: 2}},
		Window:  Window{Horizon: 120 * time.Second},
	}
	run := func(delay time.Duration) (sum Summary, wrong int) {
		cfg := base
		cfg.Fleet.SignalDelay = delay
		var recs []Record
		sum, err := Run(cfg, poisson(t, 9, 2, 400, workload.Fixed(200, 100)), ObserverFunc(func(r *Record) {
			recs = append(recs, *r)
		}))
		require.NoError(t, err)
		for _, x := range recs {
			waiting := 0
			for _, y := range recs {
				if y.Status != StatusShed && y.Arrival < x.Arrival && (y.FirstScheduled == Never || y.FirstScheduled >= x.Arrival) {
					waiting++
				}
			}
			if (x.Status == StatusShed) != (waiting > base.Gateway.Shed.QueueDepth) {
				wrong++
			}
			if x.Status == StatusShed {
				assert.Equal(t, Unrouted, x.Replica)
				assert.Equal(t, x.Arrival, x.Finish)
			}
		}
		return sum, wrong
	}
	fresh, wrong := run(0)
	assert.Positive(t, fresh.Count(StatusShed), "2 req/s on 4 seats sheds")
	assert.Zero(t, wrong, "with fresh signals, shed iff more than 2 wait")
	stale, wrongStale := run(5 * time.Second)
	assert.Positive(t, wrongStale, "a 5 s stale signal sheds by what it last saw")
	t.Logf("shed fresh %d, stale %d (%d against the fresh rule) of %d", fresh.Count(StatusShed), stale.Count(StatusShed), wrongStale, fresh.Offered)
}

func TestGatewayValidateNamesFields(t *testing.T) {
	for _, c := range []struct {
		g    Gateway
		want string
	}{
		{Gateway{Bucket: TokenBucket{MaxTokens: 1, FillInterval: 10 * time.Millisecond}}, "Gateway.Bucket.FillInterval"},
		{Gateway{Bucket: TokenBucket{FillInterval: time.Second}}, "Gateway.Bucket.MaxTokens"},
		{Gateway{Bucket: TokenBucket{MaxTokens: 5}}, "Gateway.Bucket.FillInterval is 0"},
		{Gateway{Bucket: TokenBucket{MaxTokens: 1, TokensPerFill: -1, FillInterval: time.Second}}, "Gateway.Bucket.TokensPerFill"},
		{Gateway{Limit: ConcurrencyLimit{PerReplica: -1}}, "Gateway.Limit.PerReplica"},
		{Gateway{Limit: ConcurrencyLimit{PerReplica: 1, Queue: -2}}, "Gateway.Limit.Queue"},
		{Gateway{Limit: ConcurrencyLimit{PerReplica: 1, TTL: -time.Second}}, "Gateway.Limit.TTL"},
		{Gateway{Limit: ConcurrencyLimit{Queue: 3}}, "need a PerReplica"},
		{Gateway{Shed: Saturation{KVUtil: 1.5}}, "Gateway.Shed.KVUtil"},
		{Gateway{Shed: Saturation{KVUtil: math.NaN()}}, "Gateway.Shed.KVUtil"},
		{Gateway{Shed: Saturation{QueueDepth: -1}}, "Gateway.Shed.QueueDepth"},
	} {
		err := Config{Gateway: c.g}.Validate()
		require.Error(t, err, "%+v", c.g)
		assert.Contains(t, err.Error(), c.want)
	}
	require.NoError(t, Gateway{}.Validate(), "the zero value is no gateway")
	assert.False(t, Gateway{}.On())
}
