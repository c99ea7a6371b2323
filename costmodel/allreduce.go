package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// AllReduceCurve is a measured all-reduce: its time against its message
// size on one group of GPUs, as nccl-tests' all_reduce_perf reports it
// (ReadAllReduce reads that output). Set as Collective.Measured, it
// prices a tensor-parallel step's all-reduces instead of the declared
// Bandwidth and Latency.
//
// The curve is read linearly in bytes between the measured sizes, after
// the times are made non-decreasing (isotonic regression, as the kernel
// curves are: a small message measured a few hundred nanoseconds slower
// than the next one is noise, and a model never prices more work as
// faster). Linear in bytes, not log-log: within one NCCL protocol and
// algorithm the time is affine in the size, latency + size / bandwidth
// (nccl-tests' doc/PERFORMANCE.md), which linear interpolation between
// neighbouring sizes reproduces exactly; log-log interpolation assumes a
// power law, which the latency floor breaks, and reads above both the
// affine segment and the chord. On the 2-GPU PCIe table of this
// package's tests, halfway between 512 KiB (55.07 µs) and 1 MiB
// (82.21 µs) linear reads 68.64 µs and log-log 69.61 µs.
// Below the smallest size the time is the smallest's, the latency floor;
// beyond the largest it grows in proportion to the bytes, at the largest
// size's bus bandwidth, and ProfileModel.Price warns.
//
// The zero value is invalid: a curve needs its ranks and at least one
// point.
type AllReduceCurve struct {
	// Ranks is the number of GPUs the all-reduce spanned (nccl-tests'
	// "#  Rank" lines, one group's when NCCL_TESTS_SPLIT divides them),
	// >= 2. The curve prices that tensor-parallel degree only: it must
	// equal Profile.TP.
	Ranks int
	// Points are the measurements, sizes strictly increasing.
	Points []AllReducePoint
	// DType and Op are the element type and reduction measured
	// ("bfloat16", "sum"); informative, the curve is read per byte.
	DType, Op string
	// Unchecked: the run did not check its results (all_reduce_perf -c 0
	// prints #wrong as N/A).
	Unchecked bool
	// GPU names the devices ("NVIDIA RTX PRO 6000 Blackwell Server
	// Edition"; several names joined by " + " when they differ).
	GPU string
	// Version is nccl-tests' version line ("2.19.6 nccl-headers=22807
	// nccl-library=22807"), "" when the output has none (releases before
	// late 2025).
	Version string
	// Source is the file the curve was read from.
	Source string
}

// AllReducePoint is one measured all-reduce: a message of Bytes bytes
// (nccl-tests' size column, each rank's buffer) took Us microseconds.
type AllReducePoint struct {
	Bytes int64   // > 0
	Us    float64 // > 0
}

// Validate names every bad field.
func (c *AllReduceCurve) Validate() error {
	if c == nil {
		return errors.New("costmodel: AllReduceCurve is nil")
	}
	errs := []error{atLeast("AllReduceCurve.Ranks (an all-reduce spans at least two GPUs)", c.Ranks, 2)}
	if len(c.Points) == 0 {
		errs = append(errs, errors.New("costmodel: AllReduceCurve.Points is empty: the curve needs at least one measured size"))
	}
	for i, p := range c.Points {
		if p.Bytes <= 0 {
			errs = append(errs, fmt.Errorf("costmodel: AllReduceCurve.Points[%d].Bytes must be > 0, got %d", i, p.Bytes))
		}
		errs = append(errs, positive(fmt.Sprintf("AllReduceCurve.Points[%d].Us", i), p.Us))
		if i > 0 && p.Bytes <= c.Points[i-1].Bytes {
			errs = append(errs, fmt.Errorf("costmodel: AllReduceCurve.Points[%d].Bytes must be > Points[%d].Bytes, got %d <= %d", i, i-1, p.Bytes, c.Points[i-1].Bytes))
		}
		if len(errs) >= 10 {
			break
		}
	}
	return errors.Join(errs...)
}

// Time is the curve's all-reduce time for a message of bytes, and
// whether bytes lies beyond the largest measured size (extrapolated). It
// compiles the curve on each call; ProfileModel compiles it once.
func (c *AllReduceCurve) Time(bytes float64) (time.Duration, bool) {
	t := compileAllReduce(c)
	us, beyond := t.at(bytes)
	return time.Duration(math.Round(us * 1e3)), beyond
}

// allReduceTable is a compiled AllReduceCurve: sizes and non-decreasing
// times. The zero value has no points (a declared collective).
type allReduceTable struct {
	xs, ys []float64 // bytes, µs
	ranks  int
	source string
	// lifted and lowered are the largest changes isotonic regression made
	// to one measured time, µs.
	lifted, lowered float64
}

// compileAllReduce compiles c (nil: the zero table). c must be valid.
func compileAllReduce(c *AllReduceCurve) allReduceTable {
	if c == nil || len(c.Points) == 0 {
		return allReduceTable{}
	}
	t := allReduceTable{ranks: c.Ranks, source: c.Source}
	raw := make([]float64, len(c.Points))
	for i, p := range c.Points {
		t.xs = append(t.xs, float64(p.Bytes))
		raw[i] = p.Us
	}
	t.ys = isotonic(raw)
	for i := range raw {
		t.lifted = max(t.lifted, t.ys[i]-raw[i])
		t.lowered = max(t.lowered, raw[i]-t.ys[i])
	}
	return t
}

// measured reports whether the table holds a curve.
func (t *allReduceTable) measured() bool { return len(t.xs) > 0 }

// at is the time of one all-reduce of bytes, µs, and whether bytes lies
// beyond the largest measured size. It does not allocate.
func (t *allReduceTable) at(bytes float64) (us float64, beyond bool) {
	n := len(t.xs)
	if n == 0 {
		return 0, false
	}
	if last := t.xs[n-1]; bytes > last {
		return t.ys[n-1] * bytes / last, true
	}
	i, f := bracket(t.xs, bytes)
	if f == 0 {
		return t.ys[i], false
	}
	return t.ys[i] + f*(t.ys[i+1]-t.ys[i]), false
}

// busBandwidth is nccl-tests' bus bandwidth of the largest measured size,
// bytes/s: algbw × 2 (n − 1) / n.
func (t *allReduceTable) busBandwidth() float64 {
	n := len(t.xs)
	algbw := t.xs[n-1] / (t.ys[n-1] / 1e6)
	return algbw * 2 * float64(t.ranks-1) / float64(t.ranks)
}

func (t *allReduceTable) warning(bytes float64) string {
	return fmt.Sprintf("costmodel: Profile collective read at %.0f bytes, beyond the measured %s–%s; extrapolated at the largest size's bus bandwidth (%s/s)",
		bytes, binary(t.xs[0]), binary(t.xs[len(t.xs)-1]), si(t.busBandwidth(), "B"))
}

// messageBytes is the all-reduce message of a step of tokens tokens:
// tokens × Hidden × DTypeBytes (2 when 0).
func (c Collective) messageBytes(tokens float64) float64 {
	elem := c.DTypeBytes
	if elem == 0 {
		elem = 2
	}
	return tokens * float64(c.Hidden*elem)
}

// validateMeasured checks the measured curve against the profile's TP.
func (c Collective) validateMeasured(tp int) error {
	if err := c.Measured.Validate(); err != nil {
		return fmt.Errorf("costmodel: Profile.Collective.Measured: %w", err)
	}
	if c.Measured.Ranks != tp {
		return fmt.Errorf("costmodel: Profile.Collective.Measured was measured on %d GPUs (%s) but Profile.TP is %d: an all-reduce curve prices its own group size only; measure all_reduce_perf with -g %d",
			c.Measured.Ranks, orUnstated(c.Measured.Source), tp, tp)
	}
	return nil
}

// allReduceUs is one all-reduce of a step of tokens tokens, µs, and
// whether its message lies beyond the measured curve: from the curve
// when one was measured, else from the declared figures.
func (m *ProfileModel) allReduceUs(tokens float64) (us float64, beyond bool) {
	if m.allReduce.measured() {
		return m.allReduce.at(m.collective.messageBytes(tokens))
	}
	return m.collective.allReduceUs(tokens, m.tp), false
}

// The declared collective's band: a Bandwidth and Latency declared rather
// than measured are read at these factors beside the declared figures
// (ProfileModel.CollectiveBand). They come from a published TP2 run of
// Qwen3-32B on two RTX PRO 6000 over PCIe (issue 36): a spec-sheet figure
// (64 GB/s, 10 µs) replayed it 26 % off in E2E, the figure another
// simulator's configuration of that machine had calibrated (16 GB/s,
// 20 µs: LLMServingSim's link_bw and link_latency) 1.8 %. The spec sheet
// overstated the effective bandwidth four times and understated the
// latency two times.
const (
	DeclaredBandwidthFactor = 4 // the band's bandwidth is the declared one / 4
	DeclaredLatencyFactor   = 2 // the band's latency is the declared one × 2
)

// CollectiveBand returns the alternative a model band runs beside m when
// m prices tensor parallelism from a declared collective (Bandwidth and
// Latency, no Measured curve): the same profile with the bandwidth
// divided by DeclaredBandwidthFactor and the latency multiplied by
// DeclaredLatencyFactor, named for the figures it reads. m itself is the
// band's other edge, its nominal model; together they cover a spec-sheet
// figure and the effective one measured on the same machine. Pass the
// result as sim/analysis's ModelError.Shapes: a sweep, experiment or
// sizing of replicas priced by m is refused without it.
//
// It returns nil when m has nothing declared to band: TP 1, or a
// collective measured by nccl-tests (Collective.Measured).
func (m *ProfileModel) CollectiveBand() []NamedModel {
	if m == nil || m.tp <= 1 || m.allReduce.measured() {
		return nil
	}
	alt := *m
	c := &alt.collective
	c.Bandwidth /= DeclaredBandwidthFactor
	c.Latency *= DeclaredLatencyFactor
	alt.assumptions = append([]string(nil), m.assumptions...)
	for i, a := range alt.assumptions {
		if a == declaredAssumption(m.tp, m.collective) {
			alt.assumptions[i] = fmt.Sprintf("TP %d all-reduces: %v + ring bytes at %s/s, hidden %d (the declared %v and %s/s at the band's ×%d latency and 1/%d bandwidth)",
				m.tp, c.Latency, si(c.Bandwidth, "B"), c.Hidden, m.collective.Latency, si(m.collective.Bandwidth, "B"), DeclaredLatencyFactor, DeclaredBandwidthFactor)
		}
	}
	name := fmt.Sprintf("collective at 1/%d bandwidth, %d× latency (%s/s, %v)", DeclaredBandwidthFactor, DeclaredLatencyFactor, si(c.Bandwidth, "B"), c.Latency)
	return []NamedModel{{Name: name, Model: &alt}}
}

// collectiveAssumption says how the collective of a profile at degree tp
// is priced, and whether its figure was measured.
func collectiveAssumption(tp int, c Collective) string {
	if tp <= 1 {
		return "TP 1: no collective"
	}
	if m := c.Measured; m != nil {
		p := m.Points
		checked := ""
		if m.Unchecked {
			checked = ", results unchecked"
		}
		return fmt.Sprintf("TP %d all-reduces: measured by nccl-tests all_reduce_perf (%s; out-of-place, %s %s, %d GPUs, %s–%s%s), read at tokens × hidden %d × %d B",
			tp, orUnstated(m.Source), orUnstated(m.DType), orUnstated(m.Op), m.Ranks, binary(float64(p[0].Bytes)), binary(float64(p[len(p)-1].Bytes)), checked,
			c.Hidden, int(c.messageBytes(1))/max(c.Hidden, 1))
	}
	return declaredAssumption(tp, c)
}

func declaredAssumption(tp int, c Collective) string {
	return fmt.Sprintf("TP %d all-reduces: %v + ring bytes at %s/s, hidden %d (declared, not measured: a spec-sheet figure overstated the bandwidth 4× and understated the latency 2×; run CollectiveBand beside it)",
		tp, c.Latency, si(c.Bandwidth, "B"), c.Hidden)
}
