package enginetest

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/kvtier"
)

// accept accepts every draft of an odd request and none of an even one.
type accept struct{}

func (accept) Accept(ref int32, drafted int) int { return int(ref%2) * drafted }

// The engine keeps every law on random step-by-step scenarios: chunked
// or whole prefills, FCFS or priority, speculative decoding, tight KV
// (preemptions), prefix sharing, aborts of waiting, running and in-flight
// requests, and requests the engine refuses.
func TestCheckerOnRandomScenarios(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 99))
	steps := 0
	for range 300 {
		cfg := engine.Config{
			MaxSeqs:               1 + rng.IntN(16),
			MaxBatchedTokens:      64 + 8*rng.IntN(256),
			ChunkCap:              32 * rng.IntN(4),
			KVBlocks:              8 + rng.IntN(200),
			BlockSize:             []int{4, 16, 12}[rng.IntN(3)],
			DisableChunkedPrefill: rng.IntN(5) == 0,
			MaxWaiting:            rng.IntN(7),
		}
		if cfg.DisableChunkedPrefill {
			cfg.ChunkCap = 0
		}
		if rng.IntN(2) == 1 {
			cfg.Policy = engine.Priority{}
		}
		if rng.IntN(4) == 0 {
			cfg.SpeculativeTokens = 1 + rng.IntN(6)
		}
		e, err := engine.New(cfg, nil)
		if err != nil {
			continue // a configuration Validate refuses
		}
		e.SetAcceptor(accept{})
		c := NewChecker(e)
		var now time.Duration
		var plan *engine.Plan
		next := int32(0)
		for range 20 + rng.IntN(200) {
			switch op := rng.IntN(6); {
			case op < 2:
				arg := rng.IntN(256)
				_ = c.Add(now, engine.Request{Ref: next, Input: 1 + 3*arg, Output: 1 + arg%40, Priority: arg % 3,
					Prefix: []uint64{uint64(arg % 3), uint64(arg % 5)}, PrefixBlockTokens: 16})
				next++
			case op == 2:
				_ = c.Abort(now, next-1-int32(rng.IntN(4)))
			default:
				if plan == nil {
					plan, err = c.Schedule(now)
					require.NoError(t, err)
					continue
				}
				_, err := c.Complete(plan.End)
				require.NoError(t, err)
				now, plan = plan.End, nil
				steps++
			}
			require.NoError(t, c.Err())
		}
		for !e.Idle() { // drain
			if plan == nil {
				plan, err = c.Schedule(now)
				require.NoError(t, err)
			}
			_, err := c.Complete(plan.End)
			require.NoError(t, err)
			now, plan = plan.End, nil
			steps++
		}
		require.NoError(t, c.Finish())
	}
	require.Greater(t, steps, 5000)
}

// A law broken is reported with its name and the call: outcomes doctored
// after a real step.
func TestCheckerFindsBrokenLaws(t *testing.T) {
	cases := []struct {
		law   string
		patch func(o *engine.Outcome)
	}{
		{LawEmits, func(o *engine.Outcome) { o.Emitted = append(o.Emitted, engine.Emit{Ref: 99, Tokens: 1, First: true}) }},
		{LawEmits, func(o *engine.Outcome) { o.Emitted[0].First = false }},
		{LawEmits, func(o *engine.Outcome) { o.Emitted[0].Tokens = 0 }},
		{LawOneEnd, func(o *engine.Outcome) { o.Emitted[0].Done = true }},
		{LawOneStep, func(o *engine.Outcome) { o.Streak = 1 }},
		{LawOneStep, func(o *engine.Outcome) { o.Steps = 2 }},
		{LawBlocks, func(o *engine.Outcome) { o.BlockSteps++ }},
	}
	for _, tc := range cases {
		e, err := engine.New(engine.Config{}, nil)
		require.NoError(t, err)
		c := NewChecker(e)
		require.NoError(t, c.Add(0, engine.Request{Ref: 1, Input: 100, Output: 3}))
		p, err := c.Schedule(0)
		require.NoError(t, err)
		c.call = "Complete(doctored)"
		c.free = e.FreeBlocks()
		o, err := e.Complete(p.End)
		require.NoError(t, err)
		tc.patch(o)
		c.outcome(o)
		var v *Violation
		require.True(t, errors.As(c.Err(), &v), "%s: no violation", tc.law)
		assert.Equal(t, tc.law, v.Law)
		assert.ErrorIs(t, c.Err(), ErrViolation)
		assert.Contains(t, c.Err().Error(), "enginetest: law "+tc.law+" broken after Complete(doctored): ")
	}
}

// A step the Checker sees scheduling a request it never accepted, or the
// engine holding more than it accepted, breaks the laws too.
func TestCheckerCountsWhatTheEngineHolds(t *testing.T) {
	e, err := engine.New(engine.Config{}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, engine.Request{Ref: 7, Input: 10, Output: 2})) // behind the Checker's back
	c := NewChecker(e)
	_, err = c.Schedule(0)
	require.NoError(t, err)
	var v *Violation
	require.True(t, errors.As(c.Err(), &v))
	assert.Equal(t, LawScheduled, v.Law)
	assert.Equal(t, "Schedule(0s)", v.Call)
}

// setTier is a tier below e's HBM of the given blocks: write-through,
// LRU, the keys a lookup is shown touched, a load's keys pinned until its
// release (as vLLM's CPU offloading manager keeps them).
func setTier(t *testing.T, e *engine.Engine, blocks int) {
	l, err := kvtier.New(kvtier.Config{Blocks: blocks})
	require.NoError(t, err)
	require.NoError(t, e.SetTier(&lruTier{l: l, loads: map[int32][]uint64{}}))
}

type lruTier struct {
	l     *kvtier.LRU
	loads map[int32][]uint64
}

func (x *lruTier) Store(keys, chain []uint64) bool {
	fresh := false
	for _, k := range keys {
		fresh = fresh || !x.l.Contains(k)
	}
	_, _, ok := x.l.Insert(keys, nil)
	if ok && fresh {
		x.l.Touch(chain)
	}
	return ok
}

func (x *lruTier) Find(keys []uint64, hbm int) (n int, busy bool) {
	for _, k := range keys[hbm:] {
		if !x.l.Contains(k) {
			break
		}
		if x.l.Pinned(k) {
			return 0, true
		}
		n++
	}
	x.l.Touch(keys)
	return n, false
}

func (x *lruTier) Load(ref int32, keys []uint64) {
	for _, k := range keys {
		x.l.Pin(k)
	}
	x.loads[ref] = append([]uint64(nil), keys...)
}

func (x *lruTier) Release(ref int32) {
	for _, k := range x.loads[ref] {
		x.l.Unpin(k)
	}
	delete(x.loads, ref)
}

// The engine keeps every law with Remote requests (Config.RemoteKV) and
// with loads from a tier below HBM (SetTier, in half the scenarios):
// random scenarios mixing them with local ones, their KV landing at
// random later instants (before or after other calls, a step in flight
// or not), aborts of reserved and landed ones, under KV pressure.
func TestCheckerOnRandomRemoteScenarios(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 838))
	steps, landed, loads := 0, 0, 0
	for range 200 {
		cfg := engine.Config{
			RemoteKV:         true,
			MaxSeqs:          1 + rng.IntN(16),
			MaxBatchedTokens: 64 + 8*rng.IntN(256),
			KVBlocks:         40 + rng.IntN(200),
			BlockSize:        []int{4, 16, 12}[rng.IntN(3)],
			Watermark:        float64(rng.IntN(3)) / 100,
		}
		if rng.IntN(2) == 1 {
			cfg.Policy = engine.Priority{}
		}
		e, err := engine.New(cfg, nil)
		require.NoError(t, err)
		if rng.IntN(2) == 0 {
			setTier(t, e, 16*rng.IntN(8))
		}
		c := NewChecker(e)
		var now time.Duration
		var plan *engine.Plan
		var lands []int32 // reserved, KV in transfer
		next := int32(0)
		land := func() {
			if len(lands) == 0 {
				return
			}
			i := rng.IntN(len(lands))
			if c.Land(now, lands[i]) == nil {
				landed++
			}
			lands = append(lands[:i], lands[i+1:]...)
		}
		step := func() {
			if plan == nil {
				plan, err = c.Schedule(now)
				require.NoError(t, err)
				if plan != nil {
					for _, r := range plan.Reserved {
						lands = append(lands, r.Ref)
						if r.Tier {
							loads++
						}
					}
				}
				return
			}
			_, err := c.Complete(plan.End)
			require.NoError(t, err)
			now, plan = plan.End, nil
			steps++
		}
		for range 20 + rng.IntN(200) {
			switch op := rng.IntN(8); {
			case op < 2:
				arg := rng.IntN(256)
				_ = c.Add(now, engine.Request{Ref: next, Input: 1 + 3*arg, Output: 1 + arg%40, Priority: arg % 3,
					Prefix: []uint64{uint64(arg % 3), uint64(arg % 5)}, PrefixBlockTokens: 16, Remote: rng.IntN(3) > 0})
				next++
			case op == 2:
				_ = c.Abort(now, next-1-int32(rng.IntN(4)))
			case op == 3:
				now += time.Duration(rng.IntN(50)) * time.Millisecond
				land()
			default:
				step()
			}
			require.NoError(t, c.Err())
		}
		for guard := 0; !e.Idle(); guard++ { // drain: a nil plan waits for a land
			require.Less(t, guard, 1_000_000, "the engine never drains")
			if plan == nil && len(lands) > 0 && rng.IntN(2) == 0 {
				land()
			}
			step()
			if plan == nil && !e.Idle() && !e.Busy() && len(lands) > 0 {
				land()
			}
			require.NoError(t, c.Err())
		}
		require.NoError(t, c.Finish())
	}
	require.Greater(t, steps, 5000)
	require.Greater(t, landed, 1000)
	require.Greater(t, loads, 20, "loads from the tiers")
	t.Logf("%d steps, %d landed, %d of them tier loads", steps, landed, loads)
}

// A Remote request's laws broken are reported: a landed request's emit
// marked First, and a Land the Checker did not see a reservation for.
func TestCheckerFindsBrokenRemoteLaws(t *testing.T) {
	setup := func() (*engine.Engine, *Checker, *engine.Plan) {
		e, err := engine.New(engine.Config{RemoteKV: true}, nil)
		require.NoError(t, err)
		c := NewChecker(e)
		require.NoError(t, c.Add(0, engine.Request{Ref: 1, Input: 100, Output: 3, Remote: true}))
		p, err := c.Schedule(0)
		require.NoError(t, err)
		require.Len(t, p.Reserved, 1)
		_, err = c.Complete(p.End)
		require.NoError(t, err)
		require.NoError(t, c.Err())
		return e, c, p
	}
	e, c, p := setup()
	require.NoError(t, c.Land(p.End, 1))
	p, err := c.Schedule(p.End)
	require.NoError(t, err)
	c.call = "Complete(doctored)"
	c.free = e.FreeBlocks()
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	require.Len(t, o.Emitted, 1)
	o.Emitted[0].First = true
	c.outcome(o)
	var v *Violation
	require.True(t, errors.As(c.Err(), &v))
	assert.Equal(t, LawRemote, v.Law)

	_, c, p = setup()
	c.reqs[1].reserved = false // as if Plan.Reserved had not named it
	require.NoError(t, c.Land(p.End, 1))
	require.True(t, errors.As(c.Err(), &v))
	assert.Equal(t, LawRemote, v.Law)
	assert.Equal(t, "Land(1µs, ref 1)", v.Call)
}
