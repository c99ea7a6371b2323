package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// capRow is one cap's sweep at the offered rate, and what its clients saw.
type capRow struct {
	cap   int // 0: no cap
	sweep analysis.Sweep
	curve *analysis.Curve
	obs   []clientObs // one per replication
}

// point is the row's only point.
func (r *capRow) point() *analysis.Point { return &r.curve.Points[0] }

// capConfig is the replica with a client cap of c requests in flight (0:
// none).
func capConfig(o options, c int) sim.Config {
	return sim.Config{Window: o.window(), MaxConcurrency: c}
}

// capStudy runs the offered rate uncapped and under each cap, on the same
// seeds.
func capStudy(o options) ([]capRow, error) {
	var rows []capRow
	for _, c := range append([]int{0}, o.caps...) {
		row := capRow{cap: c, obs: make([]clientObs, o.reps)}
		for i := range row.obs {
			row.obs[i] = clientObs{warmup: o.window().Warmup, horizon: o.horizon, ttftMin: math.MaxInt64}
		}
		row.sweep = analysis.Sweep{Config: capConfig(o, c), Workload: analysis.Poisson(lengths), Grid: analysis.Grid{Loads: []float64{o.rate}},
			Reps: o.reps, BaseSeed: o.seed, Workers: o.workers,
			Observe: func(_ float64, rep int) sim.Observer { return &row.obs[rep] }}
		var err error
		if row.curve, err = row.sweep.Run(); err != nil {
			if c == 0 {
				return nil, fmt.Errorf("uncapped: %w", err)
			}
			return nil, fmt.Errorf("cap %d: %w", c, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// clientObs keeps, of one run, what a client sees that the summary does
// not: when each measured request got its first token counted from the
// instant it was due (client wait + TTFT, what a user waits), each
// measured request's latencies from that instant, how many measured
// requests still waited client-side at the window's end, the smallest and
// largest TTFT from the send of every request, and the slots released
// inside the window with the time each was held.
type clientObs struct {
	warmup, horizon  time.Duration
	due              []float64 // ms; +Inf for a measured request without a first token
	fromDue          []dueRecord
	backlog          int
	ttftMin, ttftMax time.Duration
	// released counts the requests that gave their slot back (ended,
	// whatever their status) inside the window, held the total time they
	// held it (send to end) and holdMax the longest.
	released      int
	held, holdMax time.Duration
}

// dueRecord is what a measured request's SLO is judged on, its TTFT and
// E2E counted from the instant it was due rather than from its send.
type dueRecord struct {
	ok          bool // ended StatusOK
	ttft, e2e   time.Duration
	itl, itlTok time.Duration // largest gap per chunk and per token
	tpot        time.Duration // Never with fewer than two tokens
}

func (c *clientObs) Observe(r *sim.Record) {
	if r.FirstToken != sim.Never {
		c.ttftMin, c.ttftMax = min(c.ttftMin, r.TTFT()), max(c.ttftMax, r.TTFT())
	}
	if r.Sent && c.warmup < r.Finish && r.Finish <= c.horizon {
		hold := r.Finish - r.Arrival
		c.released, c.held, c.holdMax = c.released+1, c.held+hold, max(c.holdMax, hold)
	}
	if !r.Measured {
		return
	}
	if !r.Sent || r.Arrival >= c.horizon {
		c.backlog++ // due inside the window, not sent by its end
	}
	d := dueRecord{ok: r.Status == sim.StatusOK, itl: r.MaxITL, itlTok: r.MaxTokenITL, tpot: r.TPOT(), ttft: sim.Never, e2e: sim.Never}
	if r.FirstToken != sim.Never {
		d.ttft = r.FirstToken - r.Scheduled
	}
	if r.LastToken != sim.Never {
		d.e2e = r.LastToken - r.Scheduled
	}
	c.fromDue = append(c.fromDue, d)
	if r.FirstToken == sim.Never {
		c.due = append(c.due, math.Inf(1))
		return
	}
	c.due = append(c.due, float64(r.FirstToken-r.Scheduled)/1e6)
}

// goodFromDue counts the measured requests that are good by slo with
// their TTFT and E2E counted from the instant each was due: the rule sim
// applies from the send (ok, and every bound held), with the client wait
// added. Due is never after the send, so every request good from the due
// instant is good from the send too: goodFromDue ≤ Summary.Good.
func (c *clientObs) goodFromDue(slo sim.SLO) int {
	n := 0
	for _, d := range c.fromDue {
		itl := d.itl
		if slo.ITLSeries == sim.PerToken {
			itl = d.itlTok
		}
		if d.ok && d.ttft <= slo.TTFT && itl <= slo.ITL && (d.tpot == sim.Never || d.tpot <= slo.TPOT) && d.e2e <= slo.E2E {
			n++
		}
	}
	return n
}

// slotTime is the mean time a request released inside the window held
// its slot (send to end), s; NaN when none was released.
func (c *clientObs) slotTime() float64 {
	if c.released == 0 {
		return math.NaN()
	}
	return (c.held / time.Duration(c.released)).Seconds()
}

// goodputFromDue is a run's goodput with each request's TTFT counted from
// the instant it was due, per second of window, as Summary.Goodput counts
// from the send.
func goodputFromDue(s *sim.Summary, c *clientObs) float64 {
	if s.Window <= 0 {
		return math.NaN()
	}
	return float64(c.goodFromDue(s.SLO)) / s.Window.Seconds()
}

// attainmentFromDue is a run's attainment from the due instant: good
// from the due instant over the measured requests (NaN as
// Summary.Attainment is).
func attainmentFromDue(s *sim.Summary, c *clientObs) float64 {
	if math.IsNaN(s.Attainment) || s.Offered == 0 {
		return s.Attainment
	}
	return float64(c.goodFromDue(s.SLO)) / float64(s.Offered)
}

// sustainable is the most a cap of n requests in flight can carry at the
// run's slot time S: by Little's law, at most n requests each holding a
// slot S on average give at most n / S completions a second. NaN without
// a cap or without a slot released.
func (r *capRow) sustainable(c *clientObs) float64 {
	if r.cap == 0 {
		return math.NaN()
	}
	return float64(r.cap) / c.slotTime()
}

// mean is the mean over the replications of f.
func (r *capRow) mean(f func(s *sim.Summary, o *clientObs) float64) float64 {
	sum := 0.0
	for i := range r.point().Runs {
		sum += f(&r.point().Runs[i], &r.obs[i])
	}
	return sum / float64(len(r.obs))
}

// quantile is the linear (numpy default) q-quantile of xs, +Inf when it
// falls among the infinite values, NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := q * float64(len(s)-1)
	lo := int(h)
	if lo+1 >= len(s) {
		return s[lo]
	}
	if math.IsInf(s[lo+1], 1) {
		return s[lo+1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

func writeCaps(w io.Writer, o options, rows []capRow) {
	fmt.Fprintf(w, "1. A client concurrency cap: Poisson arrivals at %g req/s, sent at once or, under a cap of N, when one of\n", o.rate)
	fmt.Fprintln(w, "   N requests in flight ends (vllm bench serve --request-rate R --max-concurrency N). TTFT counts from the")
	fmt.Fprintln(w, "   send, as vLLM counts it; the client wait is the time a due request waited for a slot.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-5s %8s %8s %8s  %-20s %8s %8s %9s %9s %10s %8s\n",
		"cap", "offered", "through", "goodput", "attainment", "TTFT", "TTFT", "wait", "wait", "1st token", "waiting")
	fmt.Fprintf(w, "%-5s %8s %8s %8s  %-20s %8s %8s %9s %9s %10s %8s\n",
		"", "req/s", "req/s", "req/s", "", "p50 ms", "p99 ms", "p50 ms", "p99 ms", "p99 ms", "at end")
	for i := range rows {
		writeCapRow(w, &rows[i])
	}
	fmt.Fprintln(w, "\n   through: completions inside the window; goodput: measured requests that ended good, per second of")
	fmt.Fprintln(w, "   window, those that ended in the drain after it included; 1st token: from the instant the request was due")
	fmt.Fprintln(w, "   (wait + TTFT, what a user waits); waiting at end: measured requests due but not yet sent when the window closed.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "   Goodput counted from the instant each request was due (its open-loop arrival, before any client wait): a")
	fmt.Fprintln(w, "   request is good if its first token came within 600 ms of that instant and every ITL ≤ 150 ms. And what a cap")
	fmt.Fprintln(w, "   of N can carry: at most N requests hold a slot, each for S on average (send to end, over the slots released")
	fmt.Fprintln(w, "   inside the window), so by Little's law at most N / S req/s.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-5s %8s %8s %8s %9s %9s  %s\n", "cap", "slot S", "N / S", "through", "goodput", "goodput", "attainment")
	fmt.Fprintf(w, "%-5s %8s %8s %8s %9s %9s  %s\n", "", "s", "req/s", "req/s", "from send", "from due", "from due")
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(w, "%-5s %8s %8s %8.2f %9.2f %9.2f  %s\n", capName(r.cap), dec(r.mean(slotTime), "%.2f", r.cap),
			dec(r.mean(r.sustainableOf), "%.2f", r.cap), r.point().Throughput.Center, r.point().Goodput.Center,
			r.mean(goodputFromDue), estimate(r.fraction(attainmentFromDue), "%.3f"))
	}
	fmt.Fprintln(w)
	for _, line := range capReading(o, rows) {
		fmt.Fprintln(w, "   "+line)
	}
}

// capName names a cap as the tables do.
func capName(c int) string {
	if c == 0 {
		return "none"
	}
	return fmt.Sprint(c)
}

// dec prints x in format, "—" without a cap (c == 0) or a value.
func dec(x float64, format string, c int) string {
	if c == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf(format, x)
}

// fraction is f, a fraction, as its mean over the replications with its
// interval (clamped to [0, 1]), over those where f is not NaN.
func (r *capRow) fraction(f func(s *sim.Summary, o *clientObs) float64) stats.Interval {
	var x []float64
	for i := range r.point().Runs {
		if v := f(&r.point().Runs[i], &r.obs[i]); !math.IsNaN(v) {
			x = append(x, v)
		}
	}
	return stats.Clamp(stats.MeanInterval(x, confidence), 0, 1)
}

// sustainableOf is sustainable as a column of the table.
func (r *capRow) sustainableOf(_ *sim.Summary, c *clientObs) float64 { return r.sustainable(c) }

func writeCapRow(w io.Writer, r *capRow) {
	p := r.point()
	name := capName(r.cap)
	wait50, wait99, due := r.mean(waitP50), r.mean(waitP99), r.mean(dueP99)
	backlog := r.mean(func(_ *sim.Summary, c *clientObs) float64 { return float64(c.backlog) })
	fmt.Fprintf(w, "%-5s %8.2f %8.2f %8.2f  %-20s %8s %8s %9s %9s %10s %8.0f\n",
		name, p.Offered.Center, p.Throughput.Center, p.Goodput.Center, estimate(p.Attainment, "%.3f"),
		ms(p.TTFT.P50.Center), ms(p.TTFT.P99.Center), ms(wait50), ms(wait99), ms(due), backlog)
}

// capReading says what each cap did, from the rows' numbers.
func capReading(o options, rows []capRow) []string {
	base := &rows[0]
	bp := base.point()
	baseDue := base.mean(dueP99)
	lines := []string{fmt.Sprintf("Uncapped, the queue is the server's: TTFT p99 %s ms, attainment %s.",
		ms(bp.TTFT.P99.Center), attain(bp.Attainment.Center))}
	if math.IsNaN(bp.Attainment.Center) {
		lines[0] = "Uncapped, no measured request ended within the window and its drain: lengthen -horizon."
	}
	for i := 1; i < len(rows); i++ {
		r := &rows[i]
		p := r.point()
		waitMax := r.mean(func(s *sim.Summary, _ *clientObs) float64 { return s.ClientWait.Max })
		switch {
		case waitMax == 0:
			lines = append(lines, fmt.Sprintf("Cap %d is never reached: no request waits, and the run is the uncapped one.", r.cap))
		case r.mean(waitP99) == 0:
			lines = append(lines, fmt.Sprintf("Cap %d is rarely reached: fewer than 1 request in 100 waits (the longest wait: %s ms, mean over the seeds);",
				r.cap, ms(waitMax)),
				fmt.Sprintf("  TTFT p99 %s ms and attainment %s, as uncapped.", ms(p.TTFT.P99.Center), attain(p.Attainment.Center)))
		case p.Throughput.Center < 0.97*p.Offered.Center:
			wait := fmt.Sprintf("median wait %s s", seconds(r.mean(waitP50)))
			if math.IsNaN(r.mean(waitP50)) {
				wait = "in some seeds, no measured request was sent before the run stopped"
			}
			verdict := fmt.Sprintf("attainment reads %s", attain(p.Attainment.Center))
			if p.Attainment.Center >= r.curve.Target {
				verdict += ": met for the requests sent, not for the users"
			}
			slot, most := r.mean(slotTime), r.mean(r.sustainableOf)
			lines = append(lines, fmt.Sprintf("Cap %d serves %.2f of the %.2f req/s offered: the rest queues client-side (%s);",
				r.cap, p.Throughput.Center, p.Offered.Center, wait),
				fmt.Sprintf("  TTFT from the send stays at %s ms p99, and %s.", ms(p.TTFT.P99.Center), verdict),
				fmt.Sprintf("  %d slots each held %s s carry at most %d / %s = %s req/s (Little's law): the limit is the cap's, not the",
					r.cap, dec(slot, "%.2f", r.cap), r.cap, dec(slot, "%.2f", r.cap), dec(most, "%.2f", r.cap)),
				fmt.Sprintf("  replica's, which uncapped carries %.2f req/s at this load. Goodput from the send reads %.2f req/s,",
					bp.Throughput.Center, p.Goodput.Center),
				"  counting the backlog sent late, in the drain after the window too; from the instant each request was due",
				fmt.Sprintf("  it is %.2f req/s, attainment %s.", r.mean(goodputFromDue), attain(r.mean(attainmentFromDue))))
		default:
			lines = append(lines, fmt.Sprintf("Cap %d keeps up (%.2f req/s) and moves the queue to the client: TTFT p99 from the send %s ms,",
				r.cap, p.Throughput.Center, ms(p.TTFT.P99.Center)),
				fmt.Sprintf("  attainment %s, but the first token from the due instant is %s ms p99 (uncapped: %s ms): from the due",
					attain(p.Attainment.Center), ms(r.mean(dueP99)), ms(baseDue)),
				fmt.Sprintf("  instant its goodput is %.2f req/s and attainment %s (uncapped: %.2f req/s, %s).",
					r.mean(goodputFromDue), attain(r.mean(attainmentFromDue)), bp.Goodput.Center, attain(bp.Attainment.Center)))
		}
	}
	return lines
}

// attain prints an attainment, "n/a (no measured requests)" for NaN.
func attain(x float64) string {
	if math.IsNaN(x) {
		return "n/a (no measured requests)"
	}
	return fmt.Sprintf("%.3f", x)
}

// The columns' per-run figures, ms.
func waitP50(s *sim.Summary, _ *clientObs) float64  { return s.ClientWait.Median }
func waitP99(s *sim.Summary, _ *clientObs) float64  { return s.ClientWait.P99 }
func dueP99(_ *sim.Summary, c *clientObs) float64   { return quantile(c.due, 0.99) }
func slotTime(_ *sim.Summary, c *clientObs) float64 { return c.slotTime() }

// ms prints milliseconds as a whole number; "—" for NaN and "never" for
// a percentile among requests that got no first token.
func ms(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 1):
		return "never"
	}
	return fmt.Sprintf("%.0f", x)
}

func seconds(msec float64) string {
	if math.IsNaN(msec) {
		return "—"
	}
	return fmt.Sprintf("%.0f", msec/1000)
}

// estimate prints a centre with its interval, "[n/a]" when it has none
// (one replication).
func estimate(e stats.Interval, format string) string {
	if math.IsNaN(e.Center) {
		return "no measured requests"
	}
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return fmt.Sprintf(format+" [n/a]", e.Center)
	}
	return fmt.Sprintf(format+" ["+format+", "+format+"]", e.Center, e.Lo, e.Hi)
}
