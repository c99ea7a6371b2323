package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// replayed is the simulated run: each request's record (by request ID, the
// trace's line order) and what its steps were.
type replayed struct {
	cfg         sim.Config
	model       *costmodel.ProfileModel
	records     []sim.Record
	fingerprint string

	steps       [3]int // by sim.Composition: decode-only, mixed, prefill-only
	outside     int    // steps priced outside the profiled grid
	firstOut    string // the first of their warnings
	peakKV      int    // most KV blocks held at the start of a step
	cached      int    // prompt tokens served from the prefix cache
	cachedReqs  int    // requests that found some
	preemptions int
	visited     costmodel.Shapes
}

// profileModel reads the bundle's kernel profile and declares the layer
// count.
func profileModel(dir string, layers, tp int) (*costmodel.ProfileModel, error) {
	p, err := costmodel.ReadProfile(os.DirFS(dir), "profile", tp)
	if err != nil {
		return nil, err
	}
	p.Layers = layers
	p.Provenance.Source = filepath.ToSlash(filepath.Join(filepath.Base(dir), "profile"))
	return p.Build()
}

// config is the replica meta.json describes, priced by model.
func config(o options, e engineArgs, model costmodel.Model) sim.Config {
	return sim.Config{
		Engine: engine.Config{
			MaxSeqs:               e.MaxNumSeqs,
			MaxBatchedTokens:      e.MaxBatchedTokens,
			DisableChunkedPrefill: !e.chunkedPrefill(),
			BlockSize:             e.blockSize(),
			KVBlocks:              o.kvBlocks,
			DisablePrefixCache:    !e.prefixCaching(),
		},
		Model: model,
		// Every request is measured and judged by no SLO: the comparison
		// is of latencies, not goodput.
		SLO: sim.SLO{TTFT: sim.Unbounded, ITL: sim.Unbounded},
	}
}

func replay(o options, m measured) (*replayed, error) {
	if m.meta.Engine.DP > 1 {
		return nil, fmt.Errorf("the run used data parallelism %d: it ran %d engines behind a load balancer, and the replay is of one", m.meta.Engine.DP, m.meta.Engine.DP)
	}
	if m.meta.Engine.TP > 1 {
		return nil, fmt.Errorf("the run used tensor parallelism %d: declare the collective (costmodel.Profile.Collective) before replaying it", m.meta.Engine.TP)
	}
	model, err := profileModel(m.dir, o.layers, 1)
	if err != nil {
		return nil, err
	}
	r := &replayed{model: model, records: make([]sim.Record, len(m.requests))}
	r.cfg = config(o, m.meta.Engine, model)
	if err := r.cfg.Engine.Validate(); err != nil {
		return nil, fmt.Errorf("the replica %s describes (engine_kwargs.max_num_seqs is MaxSeqs, max_num_batched_tokens MaxBatchedTokens, block_size BlockSize; -kvblocks KVBlocks): %w",
			filepath.Join(m.dir, "vllm", "meta.json"), err)
	}
	if r.fingerprint, err = workload.FingerprintFile(m.trace, traceConfig(m.meta.Engine.blockSize())); err != nil {
		return nil, err
	}
	tr, err := openTrace(m)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if _, err := sim.Run(r.cfg, tr, r); err != nil {
		return nil, err
	}
	return r, nil
}

// openTrace opens the trace of the measured run.
func openTrace(m measured) (*workload.Trace, error) {
	return workload.OpenTrace(m.trace, traceConfig(m.meta.Engine.blockSize()))
}

// Observe keeps each request's record.
func (r *replayed) Observe(rec *sim.Record) {
	if rec.ID < uint64(len(r.records)) {
		r.records[rec.ID] = *rec
	}
	if rec.Cached > 0 {
		r.cached += rec.Cached
		r.cachedReqs++
	}
	r.preemptions += rec.Preemptions
}

// ObserveStep counts the steps by composition, notes those priced outside
// the profile, the peak of KV use, and keeps each step's shape.
func (r *replayed) ObserveStep(s *sim.Step) {
	for one := range s.All() {
		r.steps[one.Composition()]++
		r.peakKV = max(r.peakKV, one.KVUsed[0])
		b := costmodel.Batch{Prefill: one.Prefill, Decode: one.Decode, Verify: one.Verify}
		r.visited.Add(b, 1)
		if w := r.model.Price(b).Warning; w != "" {
			if r.outside == 0 {
				r.firstOut = string(w)
			}
			r.outside++
		}
	}
}
