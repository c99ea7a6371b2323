package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// continuing is an Atlas engine that keeps a decode cohort (OmitStreaks),
// holding two requests with prompts of input tokens that decode, the move
// that prefilled their prompts just completed: the state Continue plans
// from. It returns the engine and the instant the move ended.
func continuing(t *testing.T, cfg Config, m costmodel.Model, input int) (*Engine, time.Duration) {
	t.Helper()
	e, err := New(cfg, m)
	require.NoError(t, err)
	e.Runner().OmitStreaks(true)
	for ref, output := range []int{5, 9} {
		require.NoError(t, e.Add(0, Request{Ref: int32(ref), Input: input, Output: output}))
	}
	p, err := e.Schedule(0)
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	return e, p.End
}

// After the prefill of two 100-token prompts (20 + 0.035 × 200 = 27 ms),
// Continue plans what ScheduleUntil would: both decode, 45 ms a step, to
// the first finish (four more tokens for the request of five), and the
// engine's free blocks are what they were until the run's first step
// starts; Truncate at that instant drops the run whole, as if never
// planned, and ScheduleUntil then plans it again, the same.
func TestContinuePlansWhatScheduleUntilWould(t *testing.T) {
	e, end := continuing(t, Config{}, nil, 100)
	e.Runner().SetStrict(true)
	require.Equal(t, 27*time.Millisecond, end)
	free := e.FreeBlocks()
	p := e.Runner().Continue(end, time.Hour)
	require.NotNil(t, p)
	require.Equal(t, []any{end, 4, 45 * time.Millisecond, end + 4*45*time.Millisecond, 2, 0},
		[]any{p.Start, p.Steps, p.StepTime, p.End, p.Cohort, len(p.Batch.Decode)})
	require.Equal(t, free, e.FreeBlocks(), "the run takes its first step's blocks lazily")
	require.Equal(t, (5-1)+(9-1), e.Outstanding(end), "no token of the run is out before its first step ends")
	require.NoError(t, e.Check())

	busy, _, err := e.Runner().Truncate(end)
	require.NoError(t, err)
	require.False(t, busy, "a run cut at its start is dropped whole")
	require.Equal(t, free, e.FreeBlocks())
	require.NoError(t, e.Check())
	q, err := e.Runner().ScheduleUntil(end, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []any{end, 4, 45 * time.Millisecond, 2}, []any{q.Start, q.Steps, q.StepTime, q.Cohort})
}

// Continue declines, planning nothing, wherever the step-by-step plan at
// that instant could be anything but every running request decoding
// alone, or it cannot tell.
func TestContinueDeclines(t *testing.T) {
	cases := map[string]func(t *testing.T) (*Engine, time.Duration, time.Duration){
		"a request waits": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, nil, 100)
			require.NoError(t, e.Add(end, Request{Ref: 9, Input: 100, Output: 3}))
			return e, end, time.Hour
		},
		"a model that reads the contexts": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, costmodel.Linear{PerStep: 20, PerDecodeToken: 0.05, PerDecodeContext: 0.0007, PerPrefillToken: 0.035}, 100)
			return e, end, time.Hour
		},
		"no cohort (streaks listed)": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, nil, 100)
			e.Runner().OmitStreaks(false)
			return e, end, time.Hour
		},
		"a prompt still in prefill": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{ChunkCap: 64}, nil, 100) // 100 tokens: a chunk of 64 first
			return e, end, time.Hour
		},
		"not at the move's end": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, nil, 100)
			return e, end + time.Millisecond, time.Hour
		},
		"nothing may start before until": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, nil, 100)
			return e, end, end
		},
		"a move in flight": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			e, end := continuing(t, Config{}, nil, 100)
			require.NotNil(t, e.Runner().Continue(end, time.Hour))
			return e, end, time.Hour
		},
		"no block for the next step": func(t *testing.T) (*Engine, time.Duration, time.Duration) {
			// 14 blocks of 16 tokens: the 112-token prompts fill 7 each,
			// and the step that writes their 113th token needs an eighth.
			e, end := continuing(t, Config{KVBlocks: 14}, nil, 112)
			require.Zero(t, e.FreeBlocks())
			roomy, at := continuing(t, Config{KVBlocks: 16}, nil, 112)
			require.NotNil(t, roomy.Runner().Continue(at, time.Hour), "with two blocks more it continues")
			return e, end, time.Hour
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			e, now, until := setup(t)
			busy := e.Busy()
			require.Nil(t, e.Runner().Continue(now, until))
			require.Equal(t, busy, e.Busy(), "Continue planned nothing")
			require.NoError(t, e.Check())
		})
	}
}

// Continue at MaxSeqs while requests wait (admitsNone) plans what the
// step-by-step engine would: random engines of chunkRunConfig with one to
// three sequences, so that requests wait at the cap, driven in runs
// continued at every move's end (cut at their start a third of the
// time, as a driver does for an event there), with streaks omitted (the
// decode cohort), read and admit as the slow twin does step by step
// (walkRuns), and as the runs do with contAtCap off (Continue declines
// whenever anything waits).
func TestContinueAtSeqCapIsStepwise(t *testing.T) {
	runsContinued, runsContinuedWaiting, runsContinuedCut = 0, 0, 0
	at := func(cfg Config, model costmodel.Model, adds map[time.Duration][]Request, fast bool, cuts *rand.Rand) string {
		e, err := New(cfg, model)
		require.NoError(t, err)
		if !fast {
			walkRuns(e)
		}
		e.Runner().SetStrict(true)
		return timelineWith(t, e, fast, adds, timelineOpts{cont: true, omit: true, cut: func() bool { return cuts.IntN(3) == 0 }})
	}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 4144))
		cfg, model := chunkRunConfig(rng, 8)
		cfg.MaxSeqs = 1 + rng.IntN(3)
		adds := chunkRunAdds(rng, cfg, false)
		slow := at(cfg, model, adds, false, rand.New(rand.NewPCG(seed, 1)))
		fast := at(cfg, model, adds, true, rand.New(rand.NewPCG(seed, 1)))
		require.Equal(t, slow, fast, "seed %d, %+v", seed, cfg)
		contAtCap = false
		twin := at(cfg, model, adds, true, rand.New(rand.NewPCG(seed, 1)))
		contAtCap = true
		require.Equal(t, slow, twin, "seed %d, %+v, contAtCap off", seed, cfg)
	}
	t.Logf("%d continued runs, %d of them while requests waited, %d cut at their start", runsContinued, runsContinuedWaiting, runsContinuedCut)
	assert.Greater(t, runsContinuedWaiting, 100, "the scenarios no longer continue runs at MaxSeqs while requests wait")
}
