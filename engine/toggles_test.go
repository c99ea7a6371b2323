package engine

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// kvRun is one run of the KV pressure experiment: requests, preemptions and
// the mean time to first token.
type kvRun struct {
	done, preempts int
	meanTTFT       time.Duration
}

// runKV drives e with Poisson arrivals of about 2,000-token prompts and
// 200-token answers at rate until n requests have finished, and measures
// what they saw. It is a minimal driver (the sim package is the real one).
// With shared, a 1,024-token system prompt, one of 8, opens 80 % of the
// prompts (followed by 1,000 tokens of their own).
func runKV(t *testing.T, e *Engine, rate float64, n int, shared bool) kvRun {
	t.Helper()
	cfg := workload.Synthetic{Seed: 1, Count: n, Arrival: workload.Arrival{Rate: rate}, Lengths: workload.Fixed(2000, 200)}
	if shared {
		cfg.Lengths = workload.Fixed(1000, 200)
		cfg.Prefix = workload.PrefixReuse{Groups: 8, PrefixTokens: 1024, Probability: 0.8}
	}
	src, err := workload.NewSynthetic(cfg)
	require.NoError(t, err)
	arrival := map[int32]time.Duration{}
	var sum time.Duration
	var out kvRun
	next, err := src.Next()
	pending := err == nil
	var now time.Duration
	var ref int32
	for out.done < n {
		until := time.Duration(1<<62 - 1)
		if pending {
			until = next.Arrival
		}
		p, err := e.Runner().ScheduleUntil(now, until)
		require.NoError(t, err)
		end := until
		if p != nil {
			end = p.End
			out.preempts += len(p.Preempted)
		}
		// Arrivals up to the end of the move join at their instants; none
		// is due inside a run, which ScheduleUntil stops before them.
		if p != nil {
			o, err := e.Complete(p.End)
			require.NoError(t, err)
			for _, em := range o.Emitted {
				if em.First {
					sum += p.End - time.Duration(em.Tokens-1)*p.StepTime - arrival[em.Ref]
				}
				if em.Done {
					out.done++
				}
			}
		}
		for pending && next.Arrival <= end {
			arrival[ref] = next.Arrival
			require.NoError(t, e.Add(next.Arrival, Request{Ref: ref, Arrival: next.Arrival, Input: next.InputTokens, Output: next.OutputTokens,
				Prefix: next.PrefixHashes, PrefixBlockTokens: next.PrefixBlockTokens}))
			ref++
			next, err = src.Next()
			if err == io.EOF {
				pending = false
			} else {
				require.NoError(t, err)
			}
		}
		now = end
	}
	out.meanTTFT = sum / time.Duration(out.done)
	return out
}

// TestKVPressureToggles measures what each of the four ways servesim now
// follows vLLM V1 under KV pressure is worth, at a KV-starved operating
// point: the Atlas replica with 3,000 blocks (48,000 tokens, about 22
// sequences of 2,200) instead of 28,672, 2,000/200 requests near its
// saturation. Each row turns one behaviour back to servesim's old one.
// The figures go into the package doc; the test holds their direction.
//
//	go test ./engine -run KVPressureToggles -v
func TestKVPressureToggles(t *testing.T) {
	cfg := Config{KVBlocks: 3000}
	rows := []struct {
		name  string
		apply func(c *Config, e *Engine)
	}{
		{"vLLM V1 (default)", func(*Config, *Engine) {}},
		{"blocks freed first to last", func(_ *Config, e *Engine) { e.headFirst = true }},
		{"no own-block hits after preemption", func(_ *Config, e *Engine) { e.noOwnHits = true }},
		{"free blocks before cached (FreeBlocksFirst)", func(c *Config, _ *Engine) { c.FreeBlocksFirst = true }},
		{"admit on the first chunk (AdmitOnFirstChunk)", func(c *Config, _ *Engine) { c.AdmitOnFirstChunk = true }},
		{"all four turned back", func(c *Config, e *Engine) {
			e.headFirst, e.noOwnHits = true, true
			c.FreeBlocksFirst, c.AdmitOnFirstChunk = true, true
		}},
	}
	const n = 2000
	for _, point := range []struct {
		rate   float64
		shared bool
	}{{1.8, false}, {2.1, false}, {2.1, true}, {2.5, true}} {
		res := make([]kvRun, len(rows))
		for i, r := range rows {
			c := cfg
			r.apply(&c, &Engine{}) // config knobs first
			e, err := New(c, nil)
			require.NoError(t, err)
			r.apply(&c, e) // then the engine's
			res[i] = runKV(t, e, point.rate, n, point.shared)
			t.Logf("| %.1f | %-5v | %-46s | %5d | %v |", point.rate, point.shared, r.name, res[i].preempts, res[i].meanTTFT.Round(time.Millisecond))
		}
		def, headFirst, noOwn, firstChunk, before := res[0], res[1], res[2], res[4], res[5]
		where := fmt.Sprintf("%.1f req/s, shared prefixes %v", point.rate, point.shared)
		assert.Less(t, def.preempts, firstChunk.preempts, "the gate prevents preemptions: %s", where)
		assert.LessOrEqual(t, def.meanTTFT, before.meanTTFT, "servesim before waits longer: %s", where)
		if !point.shared { // every cached block is a preempted request's own
			assert.Less(t, def.meanTTFT, noOwn.meanTTFT, "own hits cut TTFT: %s", where)
			assert.Less(t, def.meanTTFT, headFirst.meanTTFT, "tail-first release keeps own hits: %s", where)
		}
	}
}
