package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// This file holds the restore bounds of KV tiers below HBM (issue 39): a
// host-memory tier per replica, as vLLM's CPU offloading connector keeps
// one, and a store shared by a fleet, as LMCache's remote backend is; the
// tokens per second each can restore into a replica, against the tokens
// per second the replica computes, and the prefix length above which
// loading a prefix beats recomputing it.

// TierLink is the path between a replica's HBM and a KV tier below it.
// The zero TierLink is no such tier.
type TierLink struct {
	// Bandwidth is the bytes/s the path carries, >= 0; 0 means no such
	// tier (its figures are absent). Tiers says whose path it is.
	Bandwidth float64
	// Latency is the fixed time of one restore before its first byte
	// lands (a DMA's setup, a network round trip and the store's
	// lookup), >= 0. It must be 0 when Bandwidth is.
	Latency time.Duration
}

// On reports whether the link declares a tier (Bandwidth > 0).
func (l TierLink) On() bool { return l.Bandwidth > 0 }

// Tiers is a replica with KV tiers below its HBM, as the restore bounds
// need it: the replica (its model's KV bytes per token, its accelerators,
// its prefill cost at its operating point's prompt length), a host tier
// of its own and a store shared by Replicas replicas like it.
//
// The bytes a restore moves follow the shards. Each tensor-parallel rank
// keeps its own shard of a block below HBM: vLLM's CPU offloading gives
// each worker a page of the block's bytes / world_size
// (cpu_page_size_per_worker, vllm/v1/kv_offload/cpu/spec.py:47-49 at
// vLLM 28be48fa9) and LMCache keys a chunk by its worker (CacheEngineKey's
// worker_id, lmcache/utils.py@54641ca). So a restore of one token moves
// Model.KVBytesPerToken (per accelerator, as ModelSpec declares it) on
// each accelerator's path, and Hardware.Accelerators times that through
// a link every rank shares.
//
// The zero Tiers is invalid (its replica is); start from AtlasTP4 and
// set the links.
type Tiers struct {
	Replica Replica // Point.PromptTokens >= 2: a hit leaves the last token to compute
	// Host is each accelerator's path to the replica's host memory (its
	// PCIe link: about 50 GB/s for a Gen5 x16), as Disaggregated's
	// LinkBandwidth is: the ranks restore their shards in parallel, each
	// over its own path. The zero value is no host tier.
	Host TierLink
	// Shared is the shared store's network link (12.5 GB/s for 100 GbE),
	// which every rank of every replica crosses: a replica restoring a
	// token moves Accelerators × KVBytesPerToken over it, and Replicas
	// replicas restoring at once share it. The zero value is no shared
	// store.
	Shared TierLink
	// Replicas is the replicas sharing the store's link, >= 0; 0 means 1.
	Replicas int
}

// Validate names every field that is out of range, under Tiers.
func (t Tiers) Validate() error {
	errs := []error{t.Replica.validate("Tiers.Replica"),
		atLeast("Tiers.Replicas", t.Replicas, 0)}
	if p := t.Replica.Point.PromptTokens; p == 1 {
		errs = append(errs, errors.New("costmodel: Tiers.Replica.Point.PromptTokens must be >= 2, got 1: a prefix hit leaves the prompt's last token to compute, so a one-token prompt has no prefix to restore"))
	}
	for _, l := range []struct {
		name string
		link TierLink
	}{{"Tiers.Host", t.Host}, {"Tiers.Shared", t.Shared}} {
		errs = append(errs, nonNegative(l.name+".Bandwidth", l.link.Bandwidth),
			durationNonNegative(l.name+".Latency", l.link.Latency))
		if l.link.Bandwidth == 0 && l.link.Latency > 0 {
			errs = append(errs, fmt.Errorf("costmodel: %s.Latency is %v but %s.Bandwidth is 0, which means no such tier: declare its bandwidth, or leave both 0", l.name, l.link.Latency, l.name))
		}
	}
	return errors.Join(errs...)
}

// replicas is Replicas with its default.
func (t Tiers) replicas() int { return max(t.Replicas, 1) }

// TiersEstimate is the restore estimate of a replica's KV tiers, each
// Figure naming its knob. Figures lists them in reading order.
type TiersEstimate struct {
	// PrefillRate is the tokens/s the replica computes a prompt's prefix
	// at: the time a prefix hit saves, per token.
	PrefillRate Figure
	// Host and Shared are the tiers' figures; the zero TierEstimate (and
	// not in Figures) when the tier's Bandwidth is 0.
	Host, Shared TierEstimate
}

// TierEstimate is one tier's restore figures.
type TierEstimate struct {
	// Restore is the tokens/s the tier restores into one replica: the
	// shared store's when all Replicas restore at once.
	Restore Figure
	// Ratio is Restore over the prefill rate: above 1 the tier restores a
	// token faster than the replica computes it; at or below 1
	// recomputing a prefix of any length takes less time than restoring
	// it (and Ratio's Basis says so). It compares one prefix's two
	// times: a restore that overlaps other requests' steps still frees
	// the replica's compute, at most Restore tokens/s of it, while its
	// own request waits the longer time.
	Ratio Figure
	// BreakEven is the prefix, in tokens, above which restoring it from
	// the tier (its latency and its bytes at the Restore rate) takes less
	// time than recomputing it: Latency / (1/prefill rate − 1/Restore).
	// 0 tokens when the latency is 0. The zero Figure (and not in
	// Figures) when Pays is false.
	BreakEven Figure
	// Pays reports whether restoring a long enough prefix from the tier
	// takes less time than recomputing it (Ratio above 1).
	Pays bool
}

// Figures lists the estimate's figures in reading order: the prefill
// rate, then each declared tier's restore bound, ratio and break-even
// (when it pays).
func (e TiersEstimate) Figures() []Figure {
	f := []Figure{e.PrefillRate}
	for _, t := range []TierEstimate{e.Host, e.Shared} {
		if t.Restore.Name == "" {
			continue
		}
		f = append(f, t.Restore, t.Ratio)
		if t.Pays {
			f = append(f, t.BreakEven)
		}
	}
	return f
}

// Estimate computes the restore estimate of t, or says why t is invalid
// or its cost model cannot price a prefix.
//
// The prefill rate is the prefill's marginal rate: a prefix hit of n
// tokens saves those tokens' computation, not the step's fixed cost (the
// prompt's last token is computed in a step all the same), so the rate is
// the PromptTokens − 1 tokens of the prefix over the difference between a
// lone PromptTokens prefill and the lone step of its last token on the
// rest as context, as the replica's cost model prices them: for Atlas
// (90 − 20.035 ms) / 1,999 tokens = 0.035 ms a token, 28,571 tokens/s.
// The break-even prices a prefix of any length at that rate, exact for
// every cost model linear in a step's prefill tokens (Frozen, Linear
// without attention-pair terms).
//
// The shared store's bound is the fleet's link divided among Replicas
// replicas restoring at once, the bound under load; its Basis gives a
// lone replica's rate on the idle link too. A tier whose Restore is at or
// below the prefill rate never pays: every token it restores takes as
// long as computing it or longer (for the shared store, when every
// replica restores at once).
func (t Tiers) Estimate() (TiersEstimate, error) {
	if err := t.Validate(); err != nil {
		return TiersEstimate{}, err
	}
	p, m := t.Replica.Point.PromptTokens, t.Replica.cost()
	whole := milliseconds(m.StepTime(lonePrefill(p)))
	last := milliseconds(m.StepTime(Batch{Prefill: []Chunk{{NewTokens: 1, Context: p - 1}}}))
	perToken := (whole - last) / float64(p-1) // ms a prefix token
	if !(perToken > 0) {
		return TiersEstimate{}, fmt.Errorf("costmodel: Tiers.Replica.Cost priced a lone %d-token prefill at %v ms, no more than its last token's step on %d context (%v ms): a prefix would cost nothing to recompute", p, whole, p-1, last)
	}
	var e TiersEstimate
	e.PrefillRate = Figure{"prefill marginal rate", 1e3 / perToken, "tokens/s",
		fmt.Sprintf("%d prefix tokens / (%.5g − %.5g ms): a lone %d-token prefill less its last token's step on %d context", p-1, whole, last, p, p-1),
		"prefill cost per token (prefill kernels, tensor parallelism)"}

	kv, acc := t.Replica.Model.KVBytesPerToken, t.Replica.Hardware.Accelerators
	if l := t.Host; l.On() {
		bytes := kv
		e.Host = tier(l, perToken, p-1, "host", l.Bandwidth/bytes,
			fmt.Sprintf("%s / %s a token on each accelerator's path (%s)", si(l.Bandwidth, "B/s"), binary(bytes), ranks(acc)),
			"Tiers.Host.Bandwidth (PCIe generation and lanes), KV bytes per token (KV quantisation, GQA)", "Tiers.Host")
	}
	if l := t.Shared; l.On() {
		n := t.replicas()
		bytes := float64(acc) * kv
		lone := l.Bandwidth / bytes
		basis := fmt.Sprintf("%s / (%d × %s = %s a token, every rank's shard over the one link)", si(l.Bandwidth, "B/s"), acc, binary(kv), binary(bytes))
		if n > 1 {
			basis += fmt.Sprintf(" / %d replicas restoring at once (a lone replica on the idle link: %.6g tokens/s)", n, lone)
		}
		e.Shared = tier(l, perToken, p-1, "shared-store", lone/float64(n), basis,
			"Tiers.Shared.Bandwidth (the store's network link), Tiers.Replicas (replicas sharing it), KV bytes per token (KV quantisation, GQA)", "Tiers.Shared")
	}
	return e, nil
}

// tier fills one tier's figures from its restore rate (tokens/s) and the
// prefill's ms a token.
func tier(l TierLink, perToken float64, prefix int, name string, rate float64, basis, knob, field string) TierEstimate {
	prefill := 1e3 / perToken
	restore := 1e3 / rate // ms a token
	x := TierEstimate{
		Restore: Figure{name + " restore bound", rate, "tokens/s", basis, knob},
		Pays:    rate > prefill,
	}
	ratio := fmt.Sprintf("%.6g tokens/s restored / %.6g tokens/s recomputed", rate, prefill)
	if x.Pays {
		ratio += fmt.Sprintf(": restoring a token (%.4g ms) is faster than computing it (%.4g ms)", restore, perToken)
	} else {
		ratio += fmt.Sprintf(": restoring a token (%.4g ms) is no faster than computing it (%.4g ms): at every prefix length recomputing is faster", restore, perToken)
	}
	x.Ratio = Figure{name + " restore / recompute", rate / prefill, "×", ratio, knob + "; prefill cost per token"}
	if !x.Pays {
		return x
	}
	n := milliseconds(l.Latency) / (perToken - restore)
	even := fmt.Sprintf("%v latency / (%.4g − %.4g ms a token): a longer prefix restores faster than it recomputes", l.Latency, perToken, restore)
	switch {
	case l.Latency == 0:
		even = "no latency: a prefix of any length restores faster than it recomputes"
	case n >= float64(prefix):
		even += fmt.Sprintf(", but the operating point's prompt has a %d-token prefix: at that length restoring does not win", prefix)
	}
	x.BreakEven = Figure{name + " break-even prefix", n, "tokens", even,
		field + ".Latency, " + field + ".Bandwidth; prefill cost per token"}
	return x
}

// ranks says who restores a replica's shards over their own paths.
func ranks(n int) string {
	if n == 1 {
		return "one accelerator: the whole KV"
	}
	return fmt.Sprintf("%d ranks restore their shards in parallel", n)
}
