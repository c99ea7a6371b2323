package costmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// This file holds the disaggregated bounds of the capacity estimate: a
// prefill pool and a decode pool of replicas joined by a link, as DistServe
// (Zhong et al., OSDI 2024) and Splitwise (Patel et al., ISCA 2024) deploy
// them, each pool's capacity per replica, the link's, and the prefill to
// decode ratio at which the pools keep pace with each other.

// Disaggregated is a prefill/decode disaggregated deployment, as the
// capacity estimate needs it: the replica of each pool (its own hardware,
// model shard, operating point and cost model) and the link that carries
// each request's prompt KV from the prefill pool to the decode pool.
//
// A request is prefilled by a prefill replica, which samples its first
// token (its TTFT ends there, as servesim's pools count it); its prompt's
// KV then crosses the link and a decode replica produces the other
// OutputTokens − 1 tokens. The two replicas' operating points must
// describe the same requests (PromptTokens and OutputTokens agree); each
// pool reads its own limits (batch, token budget, chunk cap) and its own
// KV cache.
//
// The zero Disaggregated is invalid (its replicas are); start from
// AtlasTP4 for both pools and edit fields.
type Disaggregated struct {
	Prefill Replica // a replica of the prefill pool
	Decode  Replica // a replica of the decode pool; Point.OutputTokens >= 2
	// LinkBandwidth is the bytes/s the link between the pools carries on
	// each accelerator's path, >= 0; 0 means unbounded (no transfer
	// bound). Each of the decode replica's tensor-parallel ranks reads
	// its own shard of the KV, as vLLM's NixlConnector maps each local
	// rank to the remote ranks it reads from
	// (vllm/distributed/kv_transfer/kv_connector/v1/nixl/tp_mapping.py,
	// vLLM at 28be48fa9), so the bytes on one path are the decode
	// replica's per-accelerator Model.KVBytesPerToken × the prompt. Each
	// prefill replica has its own link (its NICs), which its transfers
	// share, as sim.PrefillPool.Link declares it: the transfer bound is a
	// prefill replica's, and a fleet of P prefill replicas carries P times
	// it (Fleet).
	LinkBandwidth float64
}

// Validate names every field that is out of range, under Disaggregated.
func (d Disaggregated) Validate() error {
	errs := []error{
		d.Prefill.validate("Disaggregated.Prefill"),
		d.Decode.validate("Disaggregated.Decode"),
		nonNegative("Disaggregated.LinkBandwidth", d.LinkBandwidth),
	}
	p, q := d.Prefill.Point, d.Decode.Point
	if p.PromptTokens != q.PromptTokens {
		errs = append(errs, fmt.Errorf("costmodel: Disaggregated.Prefill.Point.PromptTokens (%d) and Disaggregated.Decode.Point.PromptTokens (%d) must agree: the pools serve the same requests", p.PromptTokens, q.PromptTokens))
	}
	if p.OutputTokens != q.OutputTokens && p.OutputTokens >= 1 {
		errs = append(errs, fmt.Errorf("costmodel: Disaggregated.Prefill.Point.OutputTokens (%d) and Disaggregated.Decode.Point.OutputTokens (%d) must agree: the pools serve the same requests", p.OutputTokens, q.OutputTokens))
	}
	if q.OutputTokens == 1 {
		errs = append(errs, errors.New("costmodel: Disaggregated.Decode.Point.OutputTokens must be >= 2, got 1: the prefill pool samples the first token, so a one-token answer never reaches a decode pool"))
	}
	return errors.Join(errs...)
}

// DisaggEstimate is the capacity estimate of a disaggregated deployment,
// bound by bound, each Figure naming its knob. Figures lists them in
// reading order; Fleet and Split price a fleet of whole replicas.
type DisaggEstimate struct {
	PrefillCapacity Figure // prompts/s one prefill replica prefills, doing nothing else
	DecodeCapacity  Figure // req/s one decode replica decodes, doing nothing else
	// TransferTime is the ms one prompt's KV takes over an idle link,
	// and TransferBound the req/s the link carries; both the zero Figure
	// (and not in Figures) when LinkBandwidth is 0.
	TransferTime  Figure
	TransferBound Figure
	Ratio         Figure // prefill replicas per decode replica at which the pools keep pace
	Balanced      Figure // req/s per replica of a fleet split at Ratio, the link aside
	CoLocated     Figure // req/s of the decode replica serving both phases: its Estimate's ServingCapacity
}

// Figures lists the estimate's figures in reading order (the transfer
// figures only when the link is bounded).
func (e DisaggEstimate) Figures() []Figure {
	f := []Figure{e.PrefillCapacity, e.DecodeCapacity}
	if e.TransferBound.Name != "" {
		f = append(f, e.TransferTime, e.TransferBound)
	}
	return append(f, e.Ratio, e.Balanced, e.CoLocated)
}

// Estimate computes the disaggregated capacity estimate of d, or says why
// d is invalid or cannot serve (a pool whose KV cache holds no request, a
// cost model that calls real work free).
//
// The prefill capacity is what one prefill replica sustains when prompts
// wait for it without end: its scheduler fills every step from the queue
// as the engine's does (vLLM V1's schedule(), vllm/v1/core/sched/
// scheduler.py at 28be48fa9: prompts in prefill first, each min(remaining, chunk cap,
// budget left), then new prompts while the budget and the seats last), so
// prompts share a step's fixed cost. It is priced by the prefill replica's
// cost model over the scheduler's cycle of steps, each chunk on the
// context of the chunks before it: exact when the cycle closes within
// 16,384 steps, else over those steps. The co-located estimate's serving
// capacity prices each prompt's prefill as one step of its own
// (Estimate.PrefillTime), whatever the budget; the prefill pool's steps
// are the budget's, so prompts shorter than the budget share a step's
// fixed cost (for Atlas 2,048 tokens a 91.68 ms step, 11.17 prompts/s,
// against 11.11 from a 90 ms step a prompt) and a prompt longer than it
// pays several, as the co-located estimate's chunked capacity counts.
//
// The decode capacity is one decode replica's batch turning over every
// OutputTokens − 1 decode steps: the first token came from the prefill
// pool, as servesim's pools count it. (vLLM's decode instance, once the
// KV has landed, recomputes the last prompt token "in order to be able to
// sample the next token", scheduler.py's _update_waiting_for_remote_kv at
// vLLM 28be48fa9, and samples the first token again itself: there a
// request takes one decode step more, OutputTokens of them.) The batch is
// bounded by the sequences of SeqTokens its KV cache holds (the
// co-located estimate's KV concurrency).
//
// In this arithmetic splitting moves no capacity: the balanced fleet's
// time per request, 1/prefill + 1/decode, is the co-located serving
// capacity's prefill(prompt) + OutputTokens × decode step / batch less the
// share of one decode step, decode step / batch, that the prefill pool's
// first token saves, when the prefill pool's steps cost what a lone
// prompt's does. What disaggregation buys
// is in latency (no prefill in a decode step, hence every ITL the pure
// decode step) and in each pool's hardware and limits; a simulation
// measures it.
func (d Disaggregated) Estimate() (DisaggEstimate, error) {
	if err := d.Validate(); err != nil {
		return DisaggEstimate{}, err
	}
	var e DisaggEstimate
	if err := d.prefillPool(&e); err != nil {
		return DisaggEstimate{}, err
	}
	if err := d.decodePool(&e); err != nil {
		return DisaggEstimate{}, err
	}
	d.link(&e)
	co, err := d.Decode.Estimate()
	if err != nil {
		return DisaggEstimate{}, err
	}
	// A prefill replica sends what its own link carries: with a link that
	// binds before its prefill does, that is what it serves.
	pc, dc := e.PrefillCapacity.Value, e.DecodeCapacity.Value
	per, by := "prompts/s a prefill replica", "prompt length against output length, each pool's step times and limits"
	if e.TransferBound.Name != "" && e.TransferBound.Value < pc {
		pc, per, by = e.TransferBound.Value, "req/s a prefill replica's link", by+", link bandwidth"
	}
	e.Ratio = Figure{"balancing P:D ratio", dc / pc, "prefill per decode replica",
		fmt.Sprintf("%.4g req/s a decode replica / %.4g %s (1P:%.3gD)", dc, pc, per, pc/dc), by}
	e.Balanced = Figure{"balanced capacity per replica", 1 / (1/pc + 1/dc), "req/s",
		fmt.Sprintf("1 / (1/%.4g + 1/%.4g): a fleet split at the balancing ratio", pc, dc),
		"both pools' capacities (neither pool idles), a prefill replica's link when it binds"}
	e.CoLocated = co.ServingCapacity
	e.CoLocated.Name = "co-located serving capacity"
	e.CoLocated.Basis = "the decode replica serving both phases: " + co.ServingCapacity.Basis
	return e, nil
}

// prefillPool fills the prefill capacity.
func (d Disaggregated) prefillPool(e *DisaggEstimate) error {
	r := d.Prefill
	h, m, p := r.Hardware, r.Model, r.Point
	perPrompt := float64(p.PromptTokens) * m.KVBytesPerToken
	fit := math.Floor(h.KVCapacity / perPrompt)
	if fit < 1 {
		return fmt.Errorf("costmodel: Disaggregated.Prefill: a %d-token prompt's KV (%s) does not fit the prefill replica's KV cache (%s)", p.PromptTokens, binary(perPrompt), binary(h.KVCapacity))
	}
	seats := p.Batch
	limits := p.limits()
	if fit < float64(seats) {
		seats = int(fit)
		limits += fmt.Sprintf(", %s in prefill at once: all the KV cache holds", plural(seats, "prompt"))
	}
	c := p.prefillCycle(r.cost(), seats)
	ms := c.ns / 1e6
	if !(ms > 0) {
		return fmt.Errorf("costmodel: Disaggregated.Prefill.Cost priced %d prefill steps at %v ms", c.steps, ms)
	}
	window := fmt.Sprintf("a %d-step cycle of a saturated prefill-only replica", c.steps)
	if !c.exact {
		window = fmt.Sprintf("the first %d steps of a saturated prefill-only replica, its cycle unclosed", c.steps)
	}
	perStep, stepMs := float64(c.tokens)/float64(c.steps), ms/float64(c.steps)
	e.PrefillCapacity = Figure{"prefill-pool capacity", float64(c.tokens) / float64(p.PromptTokens) / ms * 1e3, "prompts/s",
		fmt.Sprintf("(%.4g tokens a step / %d-token prompt) / %.4g ms a step (%s; %s)", perStep, p.PromptTokens, stepMs, limits, window),
		"token budget (prompts share a step's fixed cost), prompt length, prefill cost (prefix cache); chunk cap and batch when they leave the budget unfilled"}
	return nil
}

// decodePool fills the decode capacity.
func (d Disaggregated) decodePool(e *DisaggEstimate) error {
	r := d.Decode
	h, m, p := r.Hardware, r.Model, r.Point
	perSeq := float64(p.SeqTokens) * m.KVBytesPerToken
	fit := math.Floor(h.KVCapacity / perSeq)
	if fit < 1 {
		return fmt.Errorf("costmodel: Disaggregated.Decode: a sequence of %d tokens (%s of KV) does not fit the decode replica's KV cache (%s)", p.SeqTokens, binary(perSeq), binary(h.KVCapacity))
	}
	batch := p.Batch
	seqs := fmt.Sprintf("%d seq", batch)
	if fit < float64(batch) {
		batch = int(fit)
		seqs = fmt.Sprintf("%d seq (batch %d, but the KV cache holds %d sequences of %d tokens)", batch, p.Batch, batch, p.SeqTokens)
	}
	step := milliseconds(r.cost().StepTime(uniformDecode(batch, p.Context)))
	if !(step > 0) {
		return fmt.Errorf("costmodel: Disaggregated.Decode.Cost priced a step of %d decodes at %v ms", batch, step)
	}
	steps := p.OutputTokens - 1
	e.DecodeCapacity = Figure{"decode-pool capacity", float64(batch) / (float64(steps) * step) * 1e3, "req/s",
		fmt.Sprintf("%s / (%d decode steps × %.4g ms at %d context): the first of %d tokens comes from the prefill pool", seqs, steps, step, p.Context, p.OutputTokens),
		"batch (within KV bytes), decode step time, output length"}
	return nil
}

// link fills the transfer figures when the link is bounded.
func (d Disaggregated) link(e *DisaggEstimate) {
	bw := d.LinkBandwidth
	if bw == 0 {
		return
	}
	p, kv := d.Decode.Point, d.Decode.Model.KVBytesPerToken
	bytes := float64(p.PromptTokens) * kv
	moved := fmt.Sprintf("%d tokens × %s = %s", p.PromptTokens, binary(kv), binary(bytes))
	knob := "link bandwidth, KV bytes per token (KV quantisation, GQA), prompt length (prefix cache at the decode pool)"
	e.TransferTime = Figure{"KV transfer time", bytes / bw * 1e3, "ms",
		fmt.Sprintf("%s / %s, the link idle", moved, si(bw, "B/s")), knob}
	e.TransferBound = Figure{"transfer bound per prefill replica", bw / bytes, "req/s",
		fmt.Sprintf("%s / (%s a prompt), over one prefill replica's link", si(bw, "B/s"), moved), knob + ", more prefill replicas (links)"}
}

// Fleet is the capacity of a fleet of prefill prefill replicas and decode
// decode replicas, req/s: the least of prefill × the prefill capacity,
// decode × the decode capacity and prefill × the transfer bound (a link a
// prefill replica), naming the one that binds and its knob. Both counts
// must be >= 1.
func (e DisaggEstimate) Fleet(prefill, decode int) (Figure, error) {
	if prefill < 1 || decode < 1 {
		return Figure{}, fmt.Errorf("costmodel: a disaggregated fleet needs a replica in each pool, got prefill %d, decode %d", prefill, decode)
	}
	pc, dc := float64(prefill)*e.PrefillCapacity.Value, float64(decode)*e.DecodeCapacity.Value
	v := min(pc, dc)
	terms := fmt.Sprintf("%d × %.4g, %d × %.4g", prefill, e.PrefillCapacity.Value, decode, e.DecodeCapacity.Value)
	lc := float64(prefill) * e.TransferBound.Value
	if e.TransferBound.Name != "" {
		v = min(v, lc)
		terms += fmt.Sprintf(", %d × %.4g links", prefill, e.TransferBound.Value)
	}
	var binds, knob []string
	if v == pc {
		binds, knob = append(binds, "the prefill pool"), append(knob, "prefill replicas, prefill capacity")
	}
	if v == dc {
		binds, knob = append(binds, "the decode pool"), append(knob, "decode replicas, decode capacity")
	}
	if e.TransferBound.Name != "" && v == lc {
		binds, knob = append(binds, "the link"), append(knob, "link bandwidth")
	}
	return Figure{fmt.Sprintf("%dP:%dD fleet capacity", prefill, decode), v, "req/s",
		fmt.Sprintf("min(%s) req/s: %s binds", terms, joinAnd(binds)), joinAnd(knob)}, nil
}

// Split is a fleet's division into whole replicas of each pool.
type Split struct {
	Prefill, Decode int    // replicas in each pool, each >= 1
	Capacity        Figure // the fleet's req/s, as Fleet prices it
}

// Split divides a fleet of n replicas (n >= 2) between the pools at the
// whole numbers of prefill replicas nearest the balancing ratio's n ×
// Ratio / (1 + Ratio), below and above (one split when it is whole or
// when a pool would be empty), in ascending prefill replicas. The better
// of them is the best split of n: the fleet's capacity rises with the
// prefill replicas until the pools balance and falls after.
func (e DisaggEstimate) Split(n int) ([]Split, error) {
	if n < 2 {
		return nil, fmt.Errorf("costmodel: a disaggregated fleet of n replicas needs n >= 2 (one a pool), got %d", n)
	}
	x := float64(n) * e.Ratio.Value / (1 + e.Ratio.Value)
	lo := min(max(int(math.Floor(x)), 1), n-1)
	hi := min(max(int(math.Ceil(x)), 1), n-1)
	var out []Split
	for _, p := range []int{lo, hi} {
		if len(out) > 0 && out[0].Prefill == p {
			continue
		}
		f, err := e.Fleet(p, n-p)
		if err != nil {
			return nil, err
		}
		out = append(out, Split{Prefill: p, Decode: n - p, Capacity: f})
	}
	return out, nil
}

// joinAnd joins words as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	s := words[0]
	for _, w := range words[1 : len(words)-1] {
		s += ", " + w
	}
	return s + " and " + words[len(words)-1]
}

// maxCycleSteps bounds the steps prefillCycle simulates.
const maxCycleSteps = 1 << 14

// cycle is a window of a saturated prefill-only replica's steps.
type cycle struct {
	tokens int     // prompt tokens computed in the window
	ns     float64 // the window's step time, ns: exact sums of whole ns below 2⁵³ (104 days)
	steps  int     // steps in the window
	exact  bool    // the window is one whole period of the scheduler's states
}

// prefillCycle runs the scheduler of a prefill-only replica whose queue
// never empties, with at most seats prompts in prefill at once: each step
// the prompts in prefill, in order, take min(remaining, ChunkCap, budget
// left) tokens, then new prompts are admitted while the budget and the
// seats last, a prompt leaving when its last chunk is computed. The state
// (the progress of each prompt in prefill) is finite and each step
// determines the next, so the steps cycle; Brent's cycle finding keeps one
// saved state and returns the window between its two visits, one whole
// cycle, or all maxCycleSteps steps when none closes within them.
func (p OperatingPoint) prefillCycle(m Model, seats int) cycle {
	var (
		flight, mark []int // tokens computed of each prompt in prefill; the saved state
		chunks       []Chunk
		at, since    cycle // totals at the saved state and since the start
		power, lam   = 1, 0
	)
	take := func(done, budget int) int {
		n := min(p.PromptTokens-done, budget)
		if p.ChunkCap > 0 {
			n = min(n, p.ChunkCap)
		}
		return n
	}
	for since.steps < maxCycleSteps {
		budget := p.Budget
		chunks = chunks[:0]
		for i, done := range flight {
			if budget == 0 {
				break
			}
			n := take(done, budget)
			chunks = append(chunks, Chunk{NewTokens: n, Context: done})
			flight[i], budget = done+n, budget-n
		}
		for budget > 0 && len(flight) < seats {
			n := take(0, budget)
			chunks = append(chunks, Chunk{NewTokens: n})
			flight, budget = append(flight, n), budget-n
		}
		since.tokens += p.Budget - budget
		since.ns += float64(m.StepTime(Batch{Prefill: chunks}))
		since.steps++
		flight = slices.DeleteFunc(flight, func(done int) bool { return done == p.PromptTokens })
		if slices.Equal(flight, mark) {
			return cycle{since.tokens - at.tokens, since.ns - at.ns, since.steps - at.steps, true}
		}
		if lam++; lam == power {
			mark, at = append(mark[:0], flight...), since
			power, lam = 2*power, 0
		}
	}
	return since
}
