package costmodel

import (
	"fmt"
	"math"
)

// This file holds the estimate's load figures: the serving capacity at
// which the replica saturates, the TTFT-qualified load below it, and the
// utilisation of an offered load.

// serving fills the load figures. The serving capacity prices each
// prompt's prefill once, as one step: exact when the scheduler prefills a
// prompt in one chunk. A chunk cap (or a budget the decodes crowd) cuts it
// into several, each paying a step's fixed cost unless other prompts share
// the step; the chunked capacity is the other extreme, with no sharing, and
// a replica saturates between the two.
func (r Replica) serving(e *Estimate, s steps) {
	p := r.Point
	decode := float64(p.OutputTokens) * s.decode / float64(p.Batch) // ms of step time per request's answer
	mu := 1e3 / (decode + s.prefill)
	e.ServingCapacity = Figure{"serving capacity", mu, "req/s",
		fmt.Sprintf("1 / (%d × %.4g ms / %d + %.4g ms prefill)", p.OutputTokens, s.decode, p.Batch, s.prefill),
		"step time, batch, output length, prefill cost (prompt length, prefix cache)"}
	e.ChunkedCapacity = Figure{"serving capacity, chunks unshared", 1e3 / (decode + s.chunked), "req/s",
		fmt.Sprintf("1 / (%d × %.4g ms / %d + %.4g ms: %s of ≤ %d tokens, each a step)",
			p.OutputTokens, s.decode, p.Batch, s.chunked, plural(s.chunks, "chunk"), p.chunkSize()),
		"chunk cap, token budget (chunks per prompt)"}
	budget := e.BusyQueueBudget.Value
	q := ttftQualified(p.Batch, mu, budget/1e3, p.Target)
	basis := fmt.Sprintf("M/M/c, c = %d seats freed at %.4g/%d req/s each: P(wait > %.4g ms) ≤ %.3g; within ×2: [%.3g, %.3g]",
		p.Batch, mu, p.Batch, budget, 1-p.Target, q/2, min(2*q, mu))
	if budget < 0 {
		basis = fmt.Sprintf("none: a busy replica's TTFT floor, %.4g ms, is over the %v SLO before any queueing", e.BusyTTFT.Value, p.SLO.TTFT)
	}
	e.TTFTQualified = Figure{"TTFT-qualified load", q, "req/s", basis,
		"serving capacity, busy TTFT queue budget (chunk cap), batch (seats)"}
	if p.Offered > 0 {
		e.Utilisation = Figure{"utilisation", 100 * p.Offered / mu, "%",
			fmt.Sprintf("%.4g req/s offered / %.4g req/s serving capacity", p.Offered, mu),
			"offered load (more replicas), serving capacity"}
	}
}

// ttftQualified is the highest offered load λ at which a request waits
// for a seat longer than budget seconds with probability at most 1 −
// target, in an M/M/c queue of c seats each freed at mu/c per second: the
// replica's running list of c sequences, which at saturation turns over
// at the serving capacity mu. A prompt waits for the step in progress and
// for a seat, then is prefilled in its chunks beside the decodes; the
// queue budget is what the TTFT SLO leaves after the step in progress (at
// most the one-chunk mixed step: its 95th percentile is nearly all of it)
// and those chunks' steps. The M/M/c tail is P(W > t) = C(c, a)·exp(−(mu − λ)·t), with
// Erlang's C at a = c·λ/mu erlangs. Exponential seat times overstate the
// waits of fixed-length requests (M/D/c waits about half as long), and the
// seats turn over more slowly at saturation than below it, so the figure
// leans low; it is a pre-benchmark estimate, claimed within a factor of
// two. 0 when the budget is negative (no load qualifies).
func ttftQualified(c int, mu, budget, target float64) float64 {
	if budget < 0 {
		return 0
	}
	late := func(lambda float64) float64 {
		return erlangC(c, float64(c)*lambda/mu) * math.Exp(-(mu-lambda)*budget)
	}
	lo, hi := 0.0, mu // late(0) = 0; late rises to 1 at mu
	for range 60 {
		mid := (lo + hi) / 2
		if late(mid) <= 1-target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// erlangC is the probability that an arrival waits in an M/M/c queue
// offered a erlangs (a < c): Erlang's B by its stable recursion, then C.
func erlangC(c int, a float64) float64 {
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho + rho*b)
}

// plural writes n and a noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
