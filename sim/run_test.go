package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// runBytes runs the Atlas default near its knee and returns every record as
// text, in the order the observer saw them, plus the summary.
func runBytes(t *testing.T, seed uint64, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	cfg.Seed = seed
	sum, err := Run(cfg, poisson(t, seed, 2.5, 3000, workload.Fixed(2000, 200)), ObserverFunc(func(r *Record) {
		fmt.Fprintf(&buf, "%+v\n", *r)
	}))
	require.NoError(t, err)
	fmt.Fprintf(&buf, "%+v\n", sum)
	return buf.Bytes()
}

func TestSameSeedSameBytes(t *testing.T) {
	cfg := Config{ErrorRate: 0.01, Timeout: 20 * time.Second, Window: Window{Warmup: 100 * time.Second, Horizon: 1000 * time.Second}}
	a, b := runBytes(t, 7, cfg), runBytes(t, 7, cfg)
	sameBytes(t, a, b)
	assert.False(t, bytes.Equal(a, runBytes(t, 8, cfg)), "another seed must differ")
}

// Advancing runs of identical decode steps in one move changes nothing:
// the records and summary are the same bytes as planning every step, under
// timeouts, injected errors, a KV-starved cache that preempts, and a
// context-dependent cost model (whose steps are never identical).
func TestFastForwardIsExact(t *testing.T) {
	cfgs := map[string]Config{
		"atlas":      {ErrorRate: 0.01, Timeout: 20 * time.Second, Window: Window{Warmup: 100 * time.Second, Horizon: 1000 * time.Second}},
		"kv-starved": {Engine: engine.Config{MaxSeqs: 64, KVBlocks: 3000}, Window: Window{Horizon: 600 * time.Second}},
		"context-priced": {Model: costmodel.Func(func(b costmodel.Batch) time.Duration {
			return costmodel.Frozen{}.StepTime(b) + time.Duration(b.DecodeContext())*time.Nanosecond
		})},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			fast := runBytes(t, 5, cfg)
			cfg.Stepwise = true
			sameBytes(t, fast, runBytes(t, 5, cfg))
		})
	}
}

// Conservation: every request that arrives ends in exactly one terminal
// state, seen once by the observer, and the summary's statuses add up to
// the measured requests, and offered = good + exclusive misses.
func TestEveryRequestEndsOnce(t *testing.T) {
	cfg := Config{
		Engine:    engine.Config{MaxWaiting: 20},
		ErrorRate: 0.05, Timeout: 12 * time.Second,
		Window: Window{Warmup: 50 * time.Second, Horizon: 400 * time.Second, Drain: 5 * time.Second},
	}
	everyRequestEndsOnce(t, cfg, StatusOK, StatusRejected, StatusTimedOut, StatusErrored, StatusUnfinished)
}

// Conservation behind a gateway: the same, with the statuses the
// gateway gives (throttled, queue_full, expired behind a bucket and a
// concurrency limit; shed behind the saturation detector), each seen in
// these overloaded runs; a refused request ended at its send, an
// expired one waited exactly the TTL, and one that timed out at the
// gateway its timeout.
func TestEveryRequestEndsOnceBehindAGateway(t *testing.T) {
	base := Config{
		Engine:    engine.Config{MaxWaiting: 20},
		ErrorRate: 0.05, Timeout: 12 * time.Second,
		Window: Window{Warmup: 50 * time.Second, Horizon: 400 * time.Second, Drain: 5 * time.Second},
	}
	for _, c := range []struct {
		gw   Gateway
		want []Status
	}{
		{Gateway{Bucket: TokenBucket{MaxTokens: 20, TokensPerFill: 4, FillInterval: time.Second},
			Limit: ConcurrencyLimit{PerReplica: 24, Queue: 3, TTL: time.Second}, Shed: Saturation{KVUtil: 0.9}},
			[]Status{StatusOK, StatusErrored, StatusThrottled, StatusQueueFull, StatusExpired}},
		{Gateway{Limit: ConcurrencyLimit{PerReplica: 40, Queue: 10, TTL: 2 * time.Second}, Shed: Saturation{QueueDepth: 3}},
			[]Status{StatusOK, StatusErrored, StatusShed}},
		{Gateway{Limit: ConcurrencyLimit{PerReplica: 20, Queue: 100}},
			[]Status{StatusOK, StatusTimedOut, StatusUnfinished}},
	} {
		cfg := base
		cfg.Gateway = c.gw
		everyRequestEndsOnce(t, cfg, c.want...)
	}
}

// everyRequestEndsOnce runs an overloaded Poisson load under cfg and
// holds it to conservation; every status of want must show.
func everyRequestEndsOnce(t *testing.T, cfg Config, want ...Status) {
	t.Helper()
	const n = 2000
	seen := map[uint64]int{}
	byStatus := map[Status]int{}
	measured := 0
	src := &counted{Source: poisson(t, 11, 5, n, workload.Fixed(2000, 100))} // overloaded: rejections, timeouts, unfinished
	sum, err := Run(cfg, src, ObserverFunc(func(r *Record) {
		seen[r.ID]++
		if r.Measured {
			measured++
			byStatus[r.Status]++
		}
		if r.Status == StatusOK || r.Status == StatusErrored {
			assert.Equal(t, r.Output, r.Emitted, "request %d", r.ID)
		}
		if r.Status == StatusUnfinished {
			assert.Equal(t, cfg.Horizon+cfg.Drain, r.Finish, "unfinished requests end when the run stops")
		}
		switch {
		case r.Status == StatusExpired:
			assert.Equal(t, cfg.Gateway.Limit.TTL, r.Finish-r.Arrival, "request %d expired: it waited its TTL", r.ID)
			assert.Equal(t, cfg.Gateway.Limit.TTL, r.GatewayWait, "request %d", r.ID)
		case r.Status.Gateway():
			assert.Equal(t, r.Arrival, r.Finish, "request %d was refused at once", r.ID)
		case r.Status == StatusTimedOut && r.Replica == Unrouted:
			assert.Equal(t, cfg.Timeout, r.GatewayWait, "request %d timed out at the gateway", r.ID)
		}
		if r.Status.Gateway() {
			assert.Equal(t, Unrouted, r.Replica, "request %d never reached a replica", r.ID)
			assert.Equal(t, Never, r.FirstScheduled, "request %d", r.ID)
		}
		if r.FirstToken != Never {
			assert.LessOrEqual(t, r.Arrival, r.FirstScheduled)
			assert.LessOrEqual(t, r.FirstScheduled, r.FirstToken)
			assert.LessOrEqual(t, r.FirstToken, r.LastToken)
			assert.LessOrEqual(t, r.LastToken, r.Finish)
		}
	}))
	require.NoError(t, err)
	for id, k := range seen {
		require.Equal(t, 1, k, "request %d observed %d times", id, k)
	}
	// Every request that arrived is observed; the one the run had read
	// ahead, due after it stopped, never arrived.
	assert.Contains(t, []int{src.n - 1, src.n}, len(seen))
	assert.Equal(t, measured, sum.Offered)
	total := 0
	for st := range numStatus {
		assert.Equal(t, byStatus[st], sum.Count(st), st.String())
		total += sum.Count(st)
		if slices.Contains(want, st) {
			assert.Greater(t, sum.Count(st), 0, "this scenario should produce some %s", st)
		}
	}
	gw := 0
	for st := StatusThrottled; st < numStatus; st++ {
		gw += sum.Count(st)
	}
	assert.Equal(t, gw, sum.Misses.Gateway, "the gateway's statuses are its misses")
	assert.Equal(t, sum.Offered, total)
	assert.Equal(t, sum.Offered, sum.Good+sum.Misses.Total())
	assert.GreaterOrEqual(t, sum.Causes.Total(), sum.Misses.Total())
}

// The chapter's goodput arithmetic: good requests per second of window, and
// attainment good / offered, with failed requests kept in the denominator.
func TestGoodputKeepsFailuresInTheDenominator(t *testing.T) {
	reqs := list{}
	for i := range 10 {
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Second, InputTokens: 100, OutputTokens: 10, Failed: i%5 == 0})
	}
	sum, err := Run(Config{Window: Window{Horizon: 10 * time.Second}}, &reqs, nil)
	require.NoError(t, err)
	assert.Equal(t, 10, sum.Offered)
	assert.Equal(t, 8, sum.Good)
	assert.Equal(t, 2, sum.Count(StatusErrored))
	assert.InDelta(t, 0.8, sum.Goodput, 1e-12)
	assert.InDelta(t, 0.8, sum.Attainment, 1e-12)
	assert.Equal(t, Misses{NotOK: 2}, sum.Misses)
}

// Token timelines: a lone request's tokens come one prefill step and then one
// 45 ms decode step apart, and its summary metrics follow.
func TestTokenTimelineAndMetrics(t *testing.T) {
	reqs := list{{ID: 1, Arrival: time.Second, InputTokens: 2000, OutputTokens: 4}}
	var rec Record
	sum, err := Run(Config{KeepTokens: true}, &reqs, ObserverFunc(func(r *Record) { rec = *r; rec.Tokens = append([]time.Duration(nil), r.Tokens...) }))
	require.NoError(t, err)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{1090 * ms, 1135 * ms, 1180 * ms, 1225 * ms}, rec.Tokens)
	assert.Equal(t, 90*ms, rec.TTFT())
	assert.Equal(t, 45*ms, rec.TPOT())
	assert.Equal(t, 45*ms, rec.MaxITL)
	assert.Equal(t, 225*ms, rec.E2E())
	assert.Equal(t, time.Duration(0), rec.QueueDelay())
	assert.InDelta(t, 45.0, sum.ITL.P99, 1e-9)
	assert.Equal(t, 3, sum.ITL.N)
	assert.InDelta(t, 90.0, sum.TTFT.Mean, 1e-9)
}

// A 2,000-token prompt chunked by 256 among 31 decoders stretches their ITL
// to 73.96 ms for 7 steps, under the 150 ms budget.
func TestChunkTaxShowsInITL(t *testing.T) {
	reqs := list{}
	for i := range 31 {
		reqs = append(reqs, workload.Request{ID: uint64(i), InputTokens: 64, OutputTokens: 40})
	}
	reqs = append(reqs, workload.Request{ID: 99, Arrival: 500 * time.Millisecond, InputTokens: 2000, OutputTokens: 2})
	maxITL := map[uint64]time.Duration{}
	sum, err := Run(Config{Engine: engine.Config{ChunkCap: 256}}, &reqs, ObserverFunc(func(r *Record) { maxITL[r.ID] = r.MaxITL }))
	require.NoError(t, err)
	assert.Equal(t, 73960*time.Microsecond, maxITL[0])
	// The long prompt arrives 5.56 ms after a step boundary (89.44 ms
	// prefill + 9 × 45 ms decode = 494.44 ms), waits 39.44 ms for the next
	// one, and prefills for 7 × 73.96 + 72.28 = 590 ms: its TTFT is
	// 629.44 ms, a miss by the 600 ms SLO. The chunk tax is TTFT's too.
	assert.Equal(t, 31, sum.Good)
	assert.Equal(t, Misses{TTFT: 1}, sum.Misses)
	assert.InDelta(t, 73.96, sum.ITL.Max, 1e-9)
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := map[string]Config{
		"Engine: MaxSeqs": {Engine: engine.Config{MaxSeqs: -3}},
		"SLO.TTFT":        {SLO: SLO{TTFT: -1}},
		"Window.Horizon":  {Window: Window{Warmup: time.Second, Horizon: time.Second}},
		"Window.Drain":    {Window: Window{Drain: -1}},
		"Timeout":         {Timeout: -time.Second},
		"ErrorRate":       {ErrorRate: 2},
		"Percentiles":     {Percentiles: 7},
	}
	for field, c := range cases {
		_, err := Run(c, &list{}, nil)
		require.Error(t, err, field)
		assert.Contains(t, err.Error(), field[len(field)-min(len(field), 7):])
	}
	_, err := Run(Config{}, nil, nil)
	assert.ErrorContains(t, err, "Source")
}

type failing struct{ n int }

func (f *failing) Next() (workload.Request, error) {
	f.n++
	if f.n > 3 {
		return workload.Request{}, errors.New("trace.csv:5: field ContextTokens: \"x\" is not an integer")
	}
	return workload.Request{ID: uint64(f.n), Arrival: time.Duration(f.n) * time.Second, InputTokens: 10, OutputTokens: 2}, nil
}

func TestSourceErrorsStopTheRun(t *testing.T) {
	_, err := Run(Config{}, &failing{}, nil)
	assert.ErrorContains(t, err, "trace.csv:5: field ContextTokens")
	reqs := list{{ID: 1, Arrival: time.Second, InputTokens: 1, OutputTokens: 1}, {ID: 2, InputTokens: 1, OutputTokens: 1}}
	_, err = Run(Config{}, &reqs, nil)
	assert.ErrorContains(t, err, "arrival order")
}

// Nonsense requests end with a clear terminal status, never silently.
func TestNonsenseRequestsAreRejectedWithReasons(t *testing.T) {
	reqs := list{
		{ID: 1, InputTokens: 0, OutputTokens: 5},
		{ID: 2, InputTokens: 500_000, OutputTokens: 5},
		{ID: 3, InputTokens: 5, OutputTokens: 5},
	}
	got := map[uint64]string{}
	_, err := Run(Config{}, &reqs, ObserverFunc(func(r *Record) { got[r.ID] = r.Status.String() + ": " + r.Reason }))
	require.NoError(t, err)
	assert.Contains(t, got[1], "rejected: engine: request needs Input > 0")
	// A prompt above MaxModelLen, the Atlas replica's 458,752 KV tokens.
	assert.Equal(t, "rejected: engine: prompt too long (Input >= MaxModelLen leaves no room for an output token): MaxModelLen 458752", got[2])
	assert.Equal(t, "ok: ", got[3])
}

// closedLoop is a minimal closed-loop source: n clients, each sending its
// next request think after its previous one ends, total requests in all.
type closedLoop struct {
	clients, total, issued int
	think                  time.Duration
	ready                  []time.Duration
	finished               []uint64
}

func (c *closedLoop) Next() (workload.Request, error) {
	if c.issued >= c.total {
		return workload.Request{}, io.EOF
	}
	if c.clients > 0 {
		c.clients--
		c.issued++
		return workload.Request{ID: uint64(c.issued), InputTokens: 500, OutputTokens: 50}, nil
	}
	if len(c.ready) == 0 {
		return workload.Request{}, workload.ErrWaiting
	}
	at := c.ready[0]
	c.ready = c.ready[1:]
	c.issued++
	return workload.Request{ID: uint64(c.issued), Arrival: at, InputTokens: 500, OutputTokens: 50}, nil
}

func (c *closedLoop) Finished(id uint64, at time.Duration, ok bool) {
	c.finished = append(c.finished, id)
	c.ready = append(c.ready, at+c.think)
}

// A closed loop of N clients keeps at most N requests in flight; by Little's
// law on the whole loop, throughput = N / (response time + think time).
func TestClosedLoopFeedback(t *testing.T) {
	src := &closedLoop{clients: 8, total: 400, think: 2 * time.Second}
	sum, err := Run(Config{}, src, nil)
	require.NoError(t, err)
	assert.Equal(t, 400, sum.Count(StatusOK))
	assert.Len(t, src.finished, 400)
	assert.LessOrEqual(t, sum.MeanInSystem, 8.0)
	cycle := sum.MeanSojourn.Seconds() + 2
	assert.InEpsilon(t, 8/cycle, sum.RequestThroughput, 0.02)
}

// sameBytes fails with the first differing line, not a megabyte of diff.
func sameBytes(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := range min(len(w), len(g)) {
		if !bytes.Equal(w[i], g[i]) {
			t.Fatalf("line %d differs:\nwant %s\ngot  %s", i+1, w[i], g[i])
		}
	}
	t.Fatalf("lengths differ: %d lines, want %d", len(g), len(w))
}

// inWindow counts a run's token instants inside [Warmup, Horizon) exactly.
func TestInWindowCountsInstants(t *testing.T) {
	r := &runner{cfg: Config{Window: Window{Warmup: 100, Horizon: 200}}}
	brute := func(t0, step time.Duration, n int) int {
		k := 0
		for i := range n {
			if at := t0 + time.Duration(i)*step; at >= 100 && at < 200 {
				k++
			}
		}
		return k
	}
	for _, c := range []struct {
		t, step time.Duration
		n       int
	}{{0, 10, 30}, {95, 5, 3}, {100, 10, 10}, {190, 10, 3}, {199, 1, 5}, {200, 1, 3}, {50, 0, 1}, {150, 0, 1}, {0, 7, 40}, {101, 33, 4}} {
		assert.Equal(t, brute(c.t, c.step, c.n), r.inWindow(c.t, c.step, c.n), "%+v", c)
	}
	open := &runner{cfg: Config{}}
	assert.Equal(t, 5, open.inWindow(1000, 3, 5))
}

// The percentile method is the caller's choice, and the summary says which.
func TestPercentileMethodIsConfigurable(t *testing.T) {
	reqs := func() *list {
		l := list{}
		for i := range 4 {
			l = append(l, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * 10 * time.Second, InputTokens: 100 * (i + 1), OutputTokens: 2})
		}
		return &l
	}
	lin, err := Run(Config{}, reqs(), nil)
	require.NoError(t, err)
	emp, err := Run(Config{Percentiles: stats.InvertedCDF}, reqs(), nil)
	require.NoError(t, err)
	// TTFTs are 23.5, 27, 30.5, 34 ms: numpy's linear median is 28.75, the
	// inverted CDF's is 27.
	assert.InDelta(t, 28.75, lin.TTFT.Median, 1e-9)
	assert.InDelta(t, 27.0, emp.TTFT.Median, 1e-9)
	assert.Equal(t, stats.InvertedCDF, emp.Method)
}

// With a shared system prompt (workload.HighReuse: 4 groups of 2,048 tokens,
// reused with probability 0.9) the prefix cache serves most of those
// tokens, and TTFT falls; disabled, it serves none.
func TestPrefixCacheCutsTTFT(t *testing.T) {
	src := func() workload.Source {
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: 3, Count: 3000, Arrival: workload.Arrival{Rate: 1.5},
			Lengths: workload.Fixed(2000, 200), Prefix: workload.HighReuse})
		require.NoError(t, err)
		return g
	}
	cfg := Config{Window: Window{Warmup: time.Minute, Horizon: 30 * time.Minute}}
	on, err := Run(cfg, src(), nil)
	require.NoError(t, err)
	cfg.Engine.DisablePrefixCache = true
	off, err := Run(cfg, src(), nil)
	require.NoError(t, err)
	assert.Equal(t, 0, off.Cached)
	share := float64(on.Cached) / float64(on.InputTokens)
	t.Logf("cached %.3f of prompt tokens; TTFT p50 %.0f -> %.0f ms", share, off.TTFT.Median, on.TTFT.Median)
	// 2,048 of 4,048 prompt tokens are shared 90 % of the time, and every
	// group's prompt is soon cached: about 0.9 × 0.506 ≈ 0.45.
	assert.InDelta(t, 0.45, share, 0.03)
	assert.Less(t, on.TTFT.Median, off.TTFT.Median-40)
}

// errOnFeedback is a closed-loop source of two requests that finish
// together: after the first Finished its Next fails (a malformed line of
// the next turn), after the second it has nothing left.
type errOnFeedback struct {
	issued, finished int
	failed           bool
}

func (s *errOnFeedback) Next() (workload.Request, error) {
	switch {
	case s.issued < 2:
		s.issued++
		return workload.Request{ID: uint64(s.issued), InputTokens: 10, OutputTokens: 2}, nil
	case s.finished == 0:
		return workload.Request{}, workload.ErrWaiting
	case s.finished == 1 && !s.failed:
		s.failed = true
		return workload.Request{}, errors.New(`turns.jsonl:3: field Turn: "x" is not an integer`)
	}
	return workload.Request{}, io.EOF
}

func (s *errOnFeedback) Finished(uint64, time.Duration, bool) { s.finished++ }

// A source error met while feedback pulls (a request's end) stops the run
// with that error, even when the next request's end pulls again at the
// same instant and finds the source done: it was kept in a field the next
// pull overwrote, and the run ended as if the trace were whole.
func TestFeedbackSourceErrorStopsTheRun(t *testing.T) {
	src := &errOnFeedback{}
	var ended []uint64
	_, err := Run(Config{}, src, ObserverFunc(func(r *Record) { ended = append(ended, r.ID) }))
	require.EqualError(t, err, `sim: reading the workload: turns.jsonl:3: field Turn: "x" is not an integer`)
	assert.Equal(t, 1, src.finished, "the run stops at the error, before the second request's feedback")
	assert.Equal(t, []uint64{1}, ended)
}

// newRunner builds every replica in place in one allocation of the fleet
// (appending them one by one regrew the slice: 56 % of the setup at
// 50,000 replicas), and each sub-struct's constructor resolves its part
// of the configuration.
func TestNewRunnerBuildsEachPart(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(1000, ReplicaConfig{}), Frontends: 3}, Window: Window{Warmup: time.Second, Horizon: 10 * time.Second}, MaxBacklog: -1}
	r, err := newRunner(cfg, &list{}, nil)
	require.NoError(t, err)
	require.Len(t, r.reps, 1000)
	assert.Equal(t, 1000, cap(r.reps), "one allocation, not an appended slice's")
	for i := range r.reps {
		require.Equal(t, i, r.reps[i].idx)
	}
	assert.Equal(t, 0, r.maxHeld, "MaxBacklog < 0: no bound")
	assert.Len(t, r.signals, 3)
	assert.Equal(t, RoundRobin{}, r.router)
	assert.Equal(t, time.Second, r.opens)
	assert.Equal(t, 10*time.Second, r.closes)
	assert.Equal(t, 19*time.Second, r.stopAt, "Horizon + a window's length of drain")
	assert.False(t, r.open)
	assert.Same(t, r, r.view.r)
	assert.Equal(t, 2, r.edges)

	r, err = newRunner(Config{}, &list{}, nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxBacklog, r.maxHeld)
	assert.Equal(t, Unbounded, r.stopAt)
	assert.Equal(t, Unbounded, r.closes)
	assert.True(t, r.open)
	assert.True(t, r.lazy)
	assert.Equal(t, 1, r.edges)
}

// wrappedWaits is closedLoop answering ErrWaiting wrapped in an error of
// its own, which the runner reads as ErrWaiting (errors.Is).
type wrappedWaits struct{ closedLoop }

func (w *wrappedWaits) Next() (workload.Request, error) {
	r, err := w.closedLoop.Next()
	if err == workload.ErrWaiting {
		err = fmt.Errorf("wrappedWaits: %w", err)
	}
	return r, err
}

// TestWrappedErrWaitingWaits: a source's ErrWaiting wrapped in another
// error waits as ErrWaiting itself does (noRequest compares it first,
// then asks errors.Is), byte for byte, every record and the summary.
func TestWrappedErrWaitingWaits(t *testing.T) {
	plain, _, err := runSourceScenario(Config{}, &closedLoop{clients: 8, total: 300, think: 2 * time.Second}, true)
	require.NoError(t, err)
	wrapped, _, err := runSourceScenario(Config{}, &wrappedWaits{closedLoop{clients: 8, total: 300, think: 2 * time.Second}}, true)
	require.NoError(t, err)
	assert.Equal(t, 300, wrapped.sum.Count(StatusOK))
	sameBytes(t, plain.text, wrapped.text)
}
