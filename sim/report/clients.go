package report

import (
	"fmt"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// CardWorkloadOf is what a configuration says of the clients, for a card's
// Workload: the concurrency (sim.Config.MaxConcurrency, or the closed-loop
// clients of the Concurrency axis), the loop on that axis, and the cache
// state at the start (sim.Config.Warm). The rest (description, arrival,
// lengths, prefix reuse, fingerprint and, for a trace, the replay) is the
// caller's to state. NewCard, NewExperimentCard and NewDialCard fill a
// card's Workload with it; a caller who knows better may overwrite a
// field.
func CardWorkloadOf(cfg sim.Config, axis analysis.Axis) CardWorkload {
	w := CardWorkload{Concurrency: ConcurrencyOf(cfg, axis), CacheState: CacheStateOf(cfg)}
	if axis == analysis.Concurrency {
		w.Loop = "closed-loop: each client sends its next request the instant its answer ends"
	}
	return w
}

// ConcurrencyOf describes how many requests the clients keep in flight:
// on the Concurrency axis, the swept number of closed-loop clients (vLLM's
// bench serve --request-rate inf --max-concurrency N); on the Rate axis,
// the cap sim.Config.MaxConcurrency (--max-concurrency N with a finite
// rate), or none.
func ConcurrencyOf(cfg sim.Config, axis analysis.Axis) string {
	c := cfg.MaxConcurrency
	switch {
	case axis == analysis.Concurrency && c > 0:
		return fmt.Sprintf("concurrency N clients, closed loop, zero think time, N the swept load; at most %d in flight (MaxConcurrency)", c)
	case axis == analysis.Concurrency:
		return "concurrency N clients, closed loop, zero think time, N the swept load (as vllm bench serve --request-rate inf --max-concurrency N)"
	case c > 0:
		return fmt.Sprintf("capped at %d requests in flight (as vllm bench serve --max-concurrency %d): a request due while %d are in flight waits client-side, first come first served; TTFT counts from the send, the wait is the client wait", c, c, c)
	}
	return "no cap: open loop, every request sent the instant it is due"
}

// CacheStateOf describes the prefix caches at the start of each run:
// warm with sim.Config.Warm's shared prefixes, or cold.
func CacheStateOf(cfg sim.Config) string {
	if prefixCacheOff(cfg) {
		return "no prefix cache (Engine.DisablePrefixCache)"
	}
	if len(cfg.Warm) == 0 {
		return "cold: empty prefix cache at the start of each run"
	}
	return fmt.Sprintf("warm: %d prompts, %d tokens of shared prefixes installed in every replica's prefix cache before each run, never measured (Config.Warm)",
		len(cfg.Warm), warmTokens(cfg.Warm))
}

// warmTokens is the prompt tokens the warm prompts' prefix ids cover: whole
// prefix units that fit in each prompt, as the engine installs them.
func warmTokens(warm []workload.Request) int {
	n := 0
	for _, w := range warm {
		if p := w.PrefixBlockTokens; p > 0 {
			n += min(len(w.PrefixHashes), w.InputTokens/p) * p
		}
	}
	return n
}

// prefixCacheOff reports whether every replica runs without a prefix cache.
func prefixCacheOff(cfg sim.Config) bool {
	if cfg.Fleet.Replicas == nil {
		return cfg.Engine.DisablePrefixCache
	}
	for _, r := range cfg.Fleet.Replicas {
		if !r.Engine.DisablePrefixCache {
			return false
		}
	}
	return true
}

// pairWorkload is an A/B experiment's clients: one description when A and
// B agree, else each.
func pairWorkload(a, b sim.Config) CardWorkload {
	wa, wb := CardWorkloadOf(a, analysis.Rate), CardWorkloadOf(b, analysis.Rate)
	pair := func(x, y string) string {
		if x == y {
			return x
		}
		return fmt.Sprintf("A: %s; B: %s", x, y)
	}
	return CardWorkload{Concurrency: pair(wa.Concurrency, wb.Concurrency), CacheState: pair(wa.CacheState, wb.CacheState)}
}
