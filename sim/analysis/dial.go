package analysis

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// Dial is one configuration knob a DialSweep turns: a name the card
// prints and how a value sets it, on every replica of a fleet. The
// built-in dials are values (DialChunkCap, DialTokenBudget, DialBatch,
// DialChunkedPrefill, DialKVBlocks, DialDecodeStep); DialFunc makes one
// of anything a function of the configuration can set.
type Dial struct {
	Name string // what it sets, e.g. "Engine.ChunkCap"
	Unit string // of its values, e.g. "tokens"
	set  func(c *sim.Config, v float64)
}

// Set returns cfg with the dial at v.
func (d Dial) Set(cfg sim.Config, v float64) sim.Config {
	if d.set != nil {
		d.set(&cfg, v)
	}
	return cfg
}

// DialFunc is a dial of anything set turns: the escape hatch when no
// built-in dial names the knob.
func DialFunc(name, unit string, set func(c *sim.Config, v float64)) Dial {
	return Dial{Name: name, Unit: unit, set: set}
}

// engineDial sets a field of every replica's engine configuration (a
// disaggregated fleet's prefill pool's too).
func engineDial(name, unit string, set func(e *engine.Config, v float64)) Dial {
	each := func(rs []sim.ReplicaConfig, v float64) []sim.ReplicaConfig {
		rs = append([]sim.ReplicaConfig(nil), rs...)
		for i := range rs {
			set(&rs[i].Engine, v)
		}
		return rs
	}
	return Dial{Name: "Engine." + name, Unit: unit, set: func(c *sim.Config, v float64) {
		if c.Fleet.Prefill.On() {
			c.Fleet.Prefill.Replicas = each(c.Fleet.Prefill.Replicas, v)
		}
		if c.Fleet.Replicas == nil {
			set(&c.Engine, v)
			return
		}
		c.Fleet.Replicas = each(c.Fleet.Replicas, v)
	}}
}

// The built-in dials.
var (
	// DialChunkCap is vLLM's long_prefill_token_threshold (0: none); a
	// cap above the token budget raises the budget to it.
	DialChunkCap = engineDial("ChunkCap", "tokens", func(e *engine.Config, v float64) {
		e.ChunkCap = int(v)
		if e.ChunkCap > e.WithDefaults().MaxBatchedTokens {
			e.MaxBatchedTokens = e.ChunkCap
		}
	})
	// DialTokenBudget is vLLM's max_num_batched_tokens (Sarathi's chunk
	// size): a step's token budget.
	DialTokenBudget = engineDial("MaxBatchedTokens", "tokens", func(e *engine.Config, v float64) { e.MaxBatchedTokens = int(v) })
	// DialBatch is vLLM's max_num_seqs: the batch cap.
	DialBatch = engineDial("MaxSeqs", "sequences", func(e *engine.Config, v float64) { e.MaxSeqs = int(v) })
	// DialChunkedPrefill is chunked prefill on (1) or off (0, vLLM V1's
	// enable_chunked_prefill=False: decodes first, waiting prompts only
	// whole): off needs a token budget that holds every whole prompt.
	DialChunkedPrefill = engineDial("DisableChunkedPrefill", "on (1) / off (0)", func(e *engine.Config, v float64) {
		e.DisableChunkedPrefill = v == 0
		if e.DisableChunkedPrefill {
			e.ChunkCap = 0
		}
	})
	// DialKVBlocks is the KV cache's size in blocks.
	DialKVBlocks = engineDial("KVBlocks", "blocks", func(e *engine.Config, v float64) { e.KVBlocks = int(v) })
	// DialDecodeStep is the frozen cost model's decode step (ms): every
	// replica's model becomes costmodel.Frozen with that step.
	DialDecodeStep = Dial{Name: "costmodel.Frozen.DecodeStep", Unit: "ms", set: func(c *sim.Config, v float64) {
		*c = withModel(*c, func(m costmodel.Model) costmodel.Model {
			f, _ := m.(costmodel.Frozen)
			f.DecodeStep = time.Duration(v * float64(time.Millisecond))
			return f
		}, 0)
	}}
)

// DialSweep sweeps offered load at each value of one dial, every value on
// the same seeds (common random numbers), and compares each value's knee
// with the baseline value's, paired replication by replication.
type DialSweep struct {
	// Sweep is the sweep run at each value: its Config with the dial set,
	// its grid, replications and seeds.
	Sweep  Sweep
	Dial   Dial
	Values []float64
	// Baseline is the index in Values the others are compared with.
	Baseline int
	// Probe, when > 0, is the load at which each value's TTFT and ITL
	// percentiles are read (its ITL tax and TTFT cost).
	Probe float64
}

// Validate names every problem.
func (d DialSweep) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if d.Dial.set == nil {
		bad("DialSweep.Dial is not set (use a built-in dial or DialFunc)")
	}
	if len(d.Values) == 0 {
		bad("DialSweep.Values is empty")
	}
	if d.Baseline < 0 || d.Baseline >= max(1, len(d.Values)) {
		bad("DialSweep.Baseline must index Values (0 to %d), got %d", len(d.Values)-1, d.Baseline)
	}
	if !(d.Probe >= 0) || math.IsInf(d.Probe, 0) {
		bad("DialSweep.Probe must be a finite load >= 0 (0 for none), got %v", d.Probe)
	}
	for i, v := range d.Values {
		if err := d.Sweep.withValue(d.Dial, v).Validate(); err != nil {
			bad("DialSweep.Values[%d] = %v: %w", i, v, err)
		}
	}
	return errors.Join(errs...)
}

func (s Sweep) withValue(d Dial, v float64) Sweep {
	s.Config = d.Set(s.Config, v)
	return s
}

// DialResult is a dial sweep's outcome, one entry per value.
type DialResult struct {
	Dial     Dial
	Values   []float64
	Baseline int
	Curves   []*Curve
	// KneeDiff is each value's knee minus the baseline's, per replication
	// (each replication's knee read off its own attainment at the
	// curve's loads), with its interval across replications: paired, so
	// the seeds' noise common to both cancels. The baseline's own is 0.
	//
	// A replication whose knee lies outside the loads pairs through the
	// bound the loads give it when that fixes the difference's sign (one
	// knee below the loads, the other not): the difference is then
	// understated, never of the wrong sign. KneeBounds counts, per value,
	// the replications paired so; KneeUnpaired those left out (both knees
	// beyond the same end of the loads, or nothing measured).
	KneeDiff                 []stats.Interval
	KneeBounds, KneeUnpaired []int
	// Probe is each value's point at DialSweep.Probe (nil without one).
	Probe []Point
}

// Run sweeps every value.
func (d DialSweep) Run() (*DialResult, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	res := &DialResult{Dial: d.Dial, Values: d.Values, Baseline: d.Baseline}
	for _, v := range d.Values {
		s := d.Sweep.withValue(d.Dial, v)
		c, err := s.Run()
		if err != nil {
			return nil, fmt.Errorf("sim: %s = %v: %w", d.Dial.Name, v, err)
		}
		res.Curves = append(res.Curves, c)
		if d.Probe > 0 {
			s.Grid = Grid{Loads: []float64{d.Probe}}
			s.ModelError = ModelError{}
			pc, err := s.Run()
			if err != nil {
				return nil, fmt.Errorf("sim: %s = %v at the probe load: %w", d.Dial.Name, v, err)
			}
			res.Probe = append(res.Probe, pc.Points[0])
		}
	}
	conf := d.Sweep.withDefaults().Confidence
	base := res.Curves[d.Baseline]
	for _, c := range res.Curves {
		var diffs []float64
		bounds, unpaired := 0, 0
		for r := range repsOf(c) {
			b, sb := c.repKneeBound(r)
			a, sa := base.repKneeBound(r)
			d, bound, ok := pairKnees(a, sa, b, sb)
			if !ok {
				unpaired++
				continue
			}
			diffs = append(diffs, d)
			if bound {
				bounds++
			}
		}
		res.KneeDiff = append(res.KneeDiff, stats.MeanInterval(diffs, conf))
		res.KneeBounds = append(res.KneeBounds, bounds)
		res.KneeUnpaired = append(res.KneeUnpaired, unpaired)
	}
	return res, nil
}

func repsOf(c *Curve) int {
	if len(c.Points) == 0 {
		return 0
	}
	return len(c.Points[0].Runs)
}

// repKneeBound is replication r's knee, or when it lies outside the loads
// the bound the loads give it: side −1 with the lowest measured load (the
// knee lies below it), +1 with the highest load that met the target (the
// knee lies above it). NaN when the replication measured nothing.
func (c *Curve) repKneeBound(r int) (float64, int) {
	at, lastMet, firstMiss, found := c.crossing(func(p Point) float64 {
		if r >= len(p.Runs) {
			return math.NaN()
		}
		return p.Runs[r].Attainment
	})
	switch {
	case found:
		return at, 0
	case firstMiss > 0:
		return firstMiss, -1
	case lastMet > 0:
		return lastMet, +1
	}
	return math.NaN(), 0
}

// pairKnees is the paired knee difference b − a of one replication or
// block, using a censored knee's bound when that still fixes the sign:
// then the difference has the true one's sign and at most its magnitude
// (one knee below the loads and the other inside or above them, or one
// above and the other inside or below). Two knees censored on the same
// side have no difference (ok false). bound reports whether a bound was
// used.
func pairKnees(a float64, sa int, b float64, sb int) (diff float64, bound, ok bool) {
	if math.IsNaN(a) || math.IsNaN(b) || sa != 0 && sa == sb {
		return 0, false, false
	}
	return b - a, sa != 0 || sb != 0, true
}

// DialPrefillReplicas is prefill/decode disaggregation as a dial over a
// fleet of n replicas: at value P, P of them form the prefill pool
// (sim.PrefillPool) and n − P the decode pool; P = 0 is the co-located
// fleet of n. The decode replicas copy the configuration's first
// replica (Fleet.Replicas[0], or Config.Engine and Model), the prefill
// replicas its prefill pool's first (Fleet.Prefill.Replicas[0]) or, with
// none, the same; the prefill pool's Router, Decider and Link are
// kept. So every value runs n replicas, and a knee compared across
// values is per replica too. A value outside [0, n) leaves no decode
// replica, or is no count, and the configuration is refused.
func DialPrefillReplicas(n int) Dial {
	return Dial{Name: fmt.Sprintf("Fleet.Prefill.Replicas of %d", n), Unit: "replicas", set: func(c *sim.Config, v float64) {
		p := int(v)
		if v != float64(p) || p < 0 || p >= n {
			c.Fleet.Prefill.Replicas = []sim.ReplicaConfig{} // refused by Validate: not a split of n
			return
		}
		dec := sim.ReplicaConfig{Engine: c.Engine, Model: c.Model, Speculation: c.Speculation}
		if len(c.Fleet.Replicas) > 0 {
			dec = c.Fleet.Replicas[0]
		}
		pre := dec
		pre.Speculation = sim.Speculation{}
		if len(c.Fleet.Prefill.Replicas) > 0 {
			pre = c.Fleet.Prefill.Replicas[0]
		}
		c.Engine, c.Model, c.Speculation = engine.Config{}, nil, sim.Speculation{}
		c.Fleet.Replicas = sim.Copies(n-p, dec)
		c.Fleet.Prefill.Replicas = nil
		if p > 0 {
			c.Fleet.Prefill.Replicas = sim.Copies(p, pre)
		}
	}}
}
