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

	collective  string      // how the all-reduces of TP > 1 are priced ("" at TP 1)
	band        []bandRun   // the replay under each other model of a declared collective's band
	kernels     [3][]string // per layer, once per step, per sequence
	kernelsFrom string      // the file that lists them
	layers      int         // the decoder layer count
	layersFrom  string      // its source

	steps       [3]int // by sim.Composition: decode-only, mixed, prefill-only
	outside     int    // steps priced outside the profiled grid
	firstOut    string // the first of their warnings
	peakKV      int    // most KV blocks held at the start of a step
	cached      int    // prompt tokens served from the prefix cache
	cachedReqs  int    // requests that found some
	preemptions int
	visited     costmodel.Shapes
}

// profileModel reads the bundle's kernel profile at the run's TP degree
// (profile/tp<TP>/ when there, else profile/ itself) and declares on it
// the model.json layout (else meta.yaml's architecture default, Llama's
// list), the layer count (-layers when given, else model.json's) and, at
// TP > 1, the collective; r records where each came from.
func (r *replayed) profileModel(o options, m measured) error {
	tp := m.meta.Engine.TP
	p, err := costmodel.ReadProfile(os.DirFS(m.dir), "profile", tp)
	if err != nil {
		return err
	}
	r.kernelsFrom = "profile/meta.yaml's architecture llama (costmodel.LlamaKernels)"
	r.layersFrom = "given by -layers"
	if m.layout != nil {
		if err := m.layout.Apply(&p); err != nil {
			return err
		}
		r.kernelsFrom, r.layersFrom = costmodel.ModelFile, costmodel.ModelFile
	}
	if o.layers > 0 {
		p.Layers, r.layersFrom = o.layers, "given by -layers"
	}
	if p.Layers == 0 {
		return fmt.Errorf("the layer count is neither in %s nor given (-layers): the profile times one decoder layer", filepath.Join(m.dir, costmodel.ModelFile))
	}
	if len(p.LayerKernels) == 0 {
		return fmt.Errorf("%s: the profile's kernels are not listed: its meta.yaml names no architecture with a default list (llama), and the bundle has no %s to list them", filepath.Join(m.dir, "profile"), costmodel.ModelFile)
	}
	r.kernels = [3][]string{p.LayerKernels, p.StepKernels, p.SequenceKernels}
	r.layers = p.Layers
	if tp > 1 {
		if p.Collective, r.collective, err = collective(m, tp, p.Collective); err != nil {
			return err
		}
	}
	p.Provenance.Source = filepath.ToSlash(filepath.Join(filepath.Base(m.dir), "profile"))
	r.model, err = p.Build()
	return err
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
	r := &replayed{records: make([]sim.Record, len(m.requests))}
	if err := r.profileModel(o, m); err != nil {
		return nil, err
	}
	r.cfg = config(o, m.meta.Engine, r.model)
	if err := r.cfg.Engine.Validate(); err != nil {
		return nil, fmt.Errorf("the replica %s describes (engine_kwargs.max_num_seqs is MaxSeqs, max_num_batched_tokens MaxBatchedTokens, block_size BlockSize; the KV blocks, %s, KVBlocks): %w",
			filepath.Join(m.dir, "vllm", "meta.json"), o.kvFrom, err)
	}
	var err error
	if r.fingerprint, err = workload.FingerprintFile(m.trace, m.traceConfig()); err != nil {
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
	for _, alt := range r.model.CollectiveBand() {
		b := bandRun{name: alt.Name}
		if b.records, err = replayUnder(o, m, alt.Model); err != nil {
			return nil, err
		}
		r.band = append(r.band, b)
	}
	return r, nil
}

// bandRun is the replay under another model of the band a declared
// collective carries (costmodel.ProfileModel.CollectiveBand): the same
// profile with the collective's bandwidth divided by 4 and latency
// doubled, the gap a spec-sheet figure showed against a measured one.
type bandRun struct {
	name    string
	records []sim.Record
}

// replayUnder replays the run under model, keeping only the records.
func replayUnder(o options, m measured, model costmodel.Model) ([]sim.Record, error) {
	tr, err := openTrace(m)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	recs := make([]sim.Record, len(m.requests))
	obs := sim.ObserverFunc(func(rec *sim.Record) {
		if rec.ID < uint64(len(recs)) {
			recs[rec.ID] = *rec
		}
	})
	_, err = sim.Run(config(o, m.meta.Engine, model), tr, obs)
	return recs, err
}

// openTrace opens the trace of the measured run.
func openTrace(m measured) (*workload.Trace, error) {
	return workload.OpenTrace(m.trace, m.traceConfig())
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
