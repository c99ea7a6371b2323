package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// FuzzSpecRunsAreSteps holds speculative runs (engine/specrun.go,
// sim/specrun.go), planned to the next event and (specFar) to the
// stopping instant, cut by the events inside them, to their twin, a speculative step a move (noSpecRuns,
// every other path the same), and to Config.Stepwise, on random
// speculative single replicas: K, α, token budgets, chunk caps, sequence
// caps, block sizes, KV pressure, shared prompt blocks cached in the free
// queue, client deadlines (aborts inside runs),
// ITL bounds in either series, declared windows and horizons (edges and
// stops inside runs), and arrivals cutting runs: every record and the
// summary, the same bytes, with the engine's invariants and the batched
// contract checked at every move (runScenario).
func FuzzSpecRunsAreSteps(f *testing.F) {
	for seed := range uint64(32) {
		f.Add(randomSpecScenario(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		specRunsAreSteps(t, data)
	})
}

// TestSpecRunsAreSteps is FuzzSpecRunsAreSteps over 300 seeded
// scenarios; it requires speculative runs in most of them, and runs cut
// by an abort or a truncation among them.
func TestSpecRunsAreSteps(t *testing.T) {
	t.Parallel()
	runs, with := 0, 0
	for seed := range uint64(300) {
		n := specRunsAreSteps(t, randomSpecScenario(2000+seed))
		runs += n
		if n > 0 {
			with++
		}
	}
	t.Logf("%d speculative runs in %d of 300 scenarios", runs, with)
	require.Greater(t, with, 150, "scenarios with speculative runs")
}

// randomSpecScenario is a speculative scenario's bytes, drawn from a
// seeded stream (randomScenario's, seeds apart).
func randomSpecScenario(seed uint64) []byte { return randomScenario(seed ^ 0x5bec45<<20) }

// decodeSpecScenario is the speculative single replica and the requests
// data describes.
func decodeSpecScenario(data []byte) (Config, list) {
	b := &byteReader{data: data}
	k := 1 + b.next()%6 // K + 1 < gapLanes
	spec := Speculation{Tokens: k, Acceptance: float64(b.next()%21) / 20}
	flags := b.next()
	eng := engine.Config{MaxSeqs: 1 + b.next()%12, BlockSize: []int{16, 8, 4, 32, 12}[b.next()%5]}
	if m := b.next(); m%3 != 0 {
		eng.MaxBatchedTokens = max(k+1, eng.MaxSeqs, 8*(1+m%40))
	}
	if c := b.next(); c%3 == 1 {
		eng.ChunkCap = 16 * (1 + c%16)
		if eng.MaxBatchedTokens > 0 {
			eng.ChunkCap = min(eng.ChunkCap, eng.MaxBatchedTokens)
		}
	}
	if kv := b.next(); kv%2 == 1 {
		eng.KVBlocks = 20 + kv*3 // KV pressure: preemptions, blocks that stop a run
	}
	eng.FreeBlocksFirst = flags&16 != 0
	if flags&7 == 1 {
		eng.Policy = engine.Priority{} // no speculative cohort: its twin alone
	}
	cfg := Config{Engine: eng, Fleet: Fleet{Replicas: []ReplicaConfig{{Engine: eng, Speculation: spec}}}}
	cfg.Engine = engine.Config{}
	if t := b.next(); t%3 == 1 {
		cfg.Timeout = time.Duration(t) * 25 * time.Millisecond // aborts inside runs
	}
	if s := b.next(); s%3 != 0 {
		cfg.SLO.ITL = time.Duration(20+s%60) * time.Millisecond
		if s%2 == 1 {
			cfg.SLO.ITLSeries = PerToken
		}
	}
	if h := b.next(); h%3 != 0 {
		cfg.Warmup = time.Duration(h%5) * 150 * time.Millisecond
		if h%2 == 0 {
			cfg.Horizon = cfg.Warmup + time.Duration(1+h/3)*60*time.Millisecond
			cfg.Drain = time.Duration(h%4) * 500 * time.Millisecond
		}
	}
	if flags&2 != 0 {
		cfg.ErrorRate = 0.1
	}
	n := 1 + b.next()%50
	reqs := make(list, 0, n)
	var at time.Duration
	for i := range n {
		gap, in, out := b.next(), b.next(), b.next()
		at += time.Duration(gap%16) * time.Duration(1+flags%5) * 30 * time.Millisecond
		r := workload.Request{ID: uint64(i), Arrival: at, InputTokens: 1 + in*3, OutputTokens: 1 + out*(1+gap%3)/2,
			Priority: gap % 3}
		if g := out % 4; g > 0 && flags&8 != 0 && r.InputTokens >= eng.BlockSize {
			// Prompts of a group share up to four blocks, then diverge:
			// cached blocks in the free queue, which the runs' blocks
			// evict as the steps' would.
			for j := range r.InputTokens / eng.BlockSize {
				h := uint64(g*100 + j)
				if j >= 1+in%4 {
					h = uint64(1000*(i+1) + j)
				}
				r.PrefixHashes = append(r.PrefixHashes, h)
			}
			r.PrefixBlockTokens = eng.BlockSize
		}
		reqs = append(reqs, r)
	}
	return cfg, reqs
}

// specRunsAreSteps runs the scenario of data with speculative runs, with
// a step a move (noSpecRuns) and Stepwise, and holds the three to the
// same bytes; it returns the speculative runs accounted.
func specRunsAreSteps(t *testing.T, data []byte) int {
	t.Helper()
	cfg, reqs := decodeSpecScenario(data)
	fast, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	far, _, err := runScenarioWith(cfg, reqs, twins{specFar: true}) // runs planned to the stopping instant, cut by the events inside them
	require.NoError(t, err)
	sameBytes(t, fast.text, far.text)
	one, _, err := runScenarioWith(cfg, reqs, twins{noSpecRuns: true})
	require.NoError(t, err)
	require.Zero(t, one.specMoves)
	sameBytes(t, one.text, fast.text)
	step := cfg
	step.Stepwise = true
	stepwise, err := runScenario(step, reqs)
	require.NoError(t, err)
	sameBytes(t, stepwise.text, fast.text)
	return fast.specMoves + far.specMoves
}
