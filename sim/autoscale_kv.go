package sim

import (
	"errors"
	"fmt"
	"math"
)

// KVSaturation is llm-d's workload variant autoscaler (WVA) with its V1
// saturation analyzer, for a model of one variant: it moves the fleet by
// one replica at a tick when the replicas' KV cache usage or waiting
// queues say it runs out of room (or has room to spare). WVA does not
// scale pods itself: it publishes a desired count (wva_desired_replicas)
// that an HPA actuates, so the HPA in front of it is Autoscale.Behavior.
// Its Helm chart's default hpa.behavior (docs/integrations/
// hpa-integration.md) is, in each direction, Rules{Window: 240 s,
// Policies: 10 Pods per 150 s}; the zero Behavior acts on every
// recommendation at once. Its loop ticks every 15 s
// (internal/config/config.go, optimizationInterval), Autoscale.Interval's
// default. The code mirrored is llm-d/llm-d-workload-variant-autoscaler
// at b08b1c7 (Feb 2026), internal/saturation/analyzer.go, the V1 path of
// internal/engines/saturation/engine.go (optimizeV1); its design text is
// docs/saturation-analyzer.md.
//
// At each tick, over the serving replicas (ScaleView.Load, KVBlocks):
//   - A replica's KV cache usage is 1 − FreeBlocks/KVBlocks
//     (vllm:kv_cache_usage_perc) and its queue is Load.Waiting
//     (vllm:num_requests_waiting). It is saturated iff usage >=
//     KVThreshold or queue >= QueueThreshold (analyzeVariant).
//   - Over the non-saturated ones, the mean spare KV (KVThreshold −
//     usage) and the mean spare queue (QueueThreshold − queue); both 0
//     when every replica is saturated (AnalyzeModelSaturation).
//   - Scale up iff mean spare KV < KVSpareTrigger or mean spare queue <
//     QueueSpareTrigger (shouldScaleUp). With every replica saturated
//     both means are 0, below the (positive) triggers: it scales up.
//   - Otherwise, scale down iff at least 2 replicas are non-saturated
//     (MinNonSaturatedReplicasForScaleDown) and the non-saturated
//     replicas' mean load (threshold − mean spare) times M/(M−1), M the
//     non-saturated count, leaves both spares at or above their
//     triggers (isScaleDownSafe). Only the non-saturated replicas'
//     load counts, spread over one fewer of them: a saturated replica's
//     backlog is in neither side.
//   - The recommendation is the serving count plus one, less one (never
//     below 1), or the same (CalculateSaturationTargets: readyReplicas
//     ± 1). While any replica warms, or serves without having been
//     sampled yet (it began serving since the last sample, so it has no
//     metrics), the model is "in transition" and the recommendation is
//     the current count, serving plus warming: no scale-up and no
//     scale-down (CalculateSaturationTargets' metrics(n) != current
//     check). WVA's design text says a variant with pending replicas is
//     only skipped for scale-up and that scale-down is unaffected; its
//     code holds both, and that is what this does.
//
// The arithmetic is WVA's, in its order, float64 for float64, so a case
// on a trigger's edge falls as it does there (the comparisons are strict
// for a scale-up and inclusive for a scale-down; see the tests).
//
// Differences from WVA, each because the simulator has no such thing:
//   - Signals: WVA reads, per pod, max_over_time(...[1m]) of the two
//     vLLM metrics from Prometheus (internal/collector/registration/
//     saturation.go): the peak of the last minute's scrapes. Here they
//     are the controller's samples, each an instant's value, as stale as
//     Autoscale.MetricDelay: a burst between samples is missed where WVA's
//     peak would see it, so this reacts later to a short burst.
//   - One variant: WVA's choice of the cheapest variant to grow and the
//     most expensive to shrink (by VariantCost) is out of scope, as is its
//     GPU limiter and its scale to zero (the enforcer keeps one replica
//     with scale to zero off, as Autoscale.Min does).
//   - WVA also holds while its own last recommendation (the
//     VariantAutoscaling's status) differs from the Deployment's count,
//     an HPA in front not yet caught up: it repeats that recommendation.
//     A Policy sees no recommendation of its own, so this one recomputes
//     it at every tick; under the zero Behavior the controller sets each
//     recommendation at once and the two agree, while under a Behavior
//     that holds a change back WVA's would repeat the held count and this
//     one's may change.
//   - A draining replica is neither counted (a terminating pod is not in
//     the Deployment's replicas) nor read (it left routing); WVA's
//     one-minute peak would still see its metrics for up to a minute.
//
// On the Atlas replica the KV signal is far from its threshold: 32
// sequences (MaxSeqs) of 1,200 tokens hold 2,400 of 28,672 blocks (8 %),
// so the queue is what moves the fleet: a scale-up when the non-saturated
// replicas' queues average more than 2 (spare below 3), a scale-down
// whenever their queues, spread over one fewer, would average at most 2.
// A replica whose batch is full but whose queue is empty looks idle to
// this rule.
//
// The zero value is WVA's defaults (its saturation-scaling ConfigMap,
// config/manager/configmap-saturation-scaling.yaml): KVThreshold 0.80,
// QueueThreshold 5, KVSpareTrigger 0.1, QueueSpareTrigger 3. A zero field
// means its default, so a trigger cannot be 0 (which in WVA never fires):
// a tiny one, 1e-9, nearly is.
type KVSaturation struct {
	// KVThreshold is kvCacheThreshold: a replica whose KV cache usage is
	// at or above it is saturated; in [0, 1], 0 means 0.80.
	KVThreshold float64
	// QueueThreshold is queueLengthThreshold: a replica with this many
	// waiting requests or more is saturated; >= 0, 0 means 5.
	QueueThreshold float64
	// KVSpareTrigger is kvSpareTrigger: scale up when the non-saturated
	// replicas' mean spare KV is below it; in [0, KVThreshold], 0 means
	// 0.1.
	KVSpareTrigger float64
	// QueueSpareTrigger is queueSpareTrigger: scale up when their mean
	// spare queue is below it; >= 0, 0 means 3.
	QueueSpareTrigger float64
}

// WVA V1's defaults (config/manager/configmap-saturation-scaling.yaml).
const (
	wvaKVThreshold       = 0.80
	wvaQueueThreshold    = 5
	wvaKVSpareTrigger    = 0.1
	wvaQueueSpareTrigger = 3
	// wvaMinNonSaturated is MinNonSaturatedReplicasForScaleDown
	// (internal/saturation/constants.go).
	wvaMinNonSaturated = 2
	// maxQueueThreshold bounds the queue fields, far above any queue.
	maxQueueThreshold = 1e9
)

// withDefaults fills in the zero fields.
func (p KVSaturation) withDefaults() KVSaturation {
	if p.KVThreshold == 0 {
		p.KVThreshold = wvaKVThreshold
	}
	if p.QueueThreshold == 0 {
		p.QueueThreshold = wvaQueueThreshold
	}
	if p.KVSpareTrigger == 0 {
		p.KVSpareTrigger = wvaKVSpareTrigger
	}
	if p.QueueSpareTrigger == 0 {
		p.QueueSpareTrigger = wvaQueueSpareTrigger
	}
	return p
}

// Validate refuses a KV field outside [0, 1], a queue field negative or
// above 1e9, anything not a number, and a KVSpareTrigger above
// KVThreshold (after defaults), as WVA's SaturationScalingConfig.Validate
// does, naming the field.
func (p KVSaturation) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("KVSaturation."+format, a...)) }
	unit := func(name string, x, def float64) {
		if math.IsNaN(x) || x < 0 || x > 1 {
			bad("%s must be in [0, 1] (0 means %v), got %v", name, def, x)
		}
	}
	queue := func(name string, x, def float64) {
		if math.IsNaN(x) || x < 0 || x > maxQueueThreshold {
			bad("%s must be in [0, %g] (0 means %v), got %v", name, maxQueueThreshold, def, x)
		}
	}
	unit("KVThreshold", p.KVThreshold, wvaKVThreshold)
	queue("QueueThreshold", p.QueueThreshold, wvaQueueThreshold)
	unit("KVSpareTrigger", p.KVSpareTrigger, wvaKVSpareTrigger)
	queue("QueueSpareTrigger", p.QueueSpareTrigger, wvaQueueSpareTrigger)
	if len(errs) == 0 {
		if d := p.withDefaults(); d.KVSpareTrigger > d.KVThreshold {
			bad("KVSpareTrigger (%v) must be <= KVThreshold (%v): a spare above the threshold can never be reached (zero fields count as their defaults)", d.KVSpareTrigger, d.KVThreshold)
		}
	}
	return errors.Join(errs...)
}

// Desired is WVA V1's target for the fleet: the serving count plus one,
// less one or the same, or the current count while a replica warms or
// has not been sampled.
func (p KVSaturation) Desired(v *ScaleView) int {
	p = p.withDefaults()
	n := v.Serving()
	// Read every replica at every tick, as WVA queries every loop (and
	// so that the samples' refreshes do not depend on the decision).
	reporting := 0
	for i := range n {
		if v.Load(i) != (Load{}) { // sampled: a replica holding nothing has every block free
			reporting++
		}
	}
	current := n + v.Warming()
	a := p.analyze(n, func(i int) (float64, int) {
		l := v.Load(i)
		return 1 - float64(l.FreeBlocks)/float64(v.KVBlocks(i)), l.Waiting
	})
	return saturationTarget(current, reporting, a)
}

// saturationAnalysis is WVA's ModelSaturationAnalysis of a model of one
// variant.
type saturationAnalysis struct {
	replicas, nonSaturated    int
	avgSpareKV, avgSpareQueue float64
	scaleUp, scaleDownSafe    bool
}

// analyze is WVA V1's AnalyzeModelSaturation (internal/saturation/
// analyzer.go) over n replicas of one variant, the i-th's KV cache usage
// and waiting requests given by replica(i); p has its defaults. The
// arithmetic is WVA's, in its order: analyzeVariant's per-variant mean,
// then the model's mean of the variants' means weighted by their
// non-saturated counts (the same mean, possibly a rounding apart), then
// shouldScaleUp and isScaleDownSafe.
func (p KVSaturation) analyze(n int, replica func(i int) (kv float64, waiting int)) saturationAnalysis {
	a := saturationAnalysis{replicas: n}
	if n == 0 { // no metrics: neither scale-up nor scale-down
		return a
	}
	// analyzeVariant
	var spareKV, spareQueue, varKV, varQueue float64
	for i := range n {
		kv, waiting := replica(i)
		if kv >= p.KVThreshold || float64(waiting) >= p.QueueThreshold {
			continue // saturated
		}
		spareKV += p.KVThreshold - kv
		spareQueue += p.QueueThreshold - float64(waiting)
		a.nonSaturated++
	}
	if a.nonSaturated > 0 {
		varKV = spareKV / float64(a.nonSaturated)
		varQueue = spareQueue / float64(a.nonSaturated)
		// AnalyzeModelSaturation: across variants (here one).
		a.avgSpareKV = varKV * float64(a.nonSaturated) / float64(a.nonSaturated)
		a.avgSpareQueue = varQueue * float64(a.nonSaturated) / float64(a.nonSaturated)
	}
	// shouldScaleUp
	a.scaleUp = a.avgSpareKV < p.KVSpareTrigger || a.avgSpareQueue < p.QueueSpareTrigger
	// isScaleDownSafe
	if a.nonSaturated >= wvaMinNonSaturated {
		avgKVLoad := p.KVThreshold - a.avgSpareKV
		avgQueueLoad := p.QueueThreshold - a.avgSpareQueue
		factor := float64(a.nonSaturated) / float64(a.nonSaturated-1)
		remainingKV := p.KVThreshold - avgKVLoad*factor
		remainingQueue := p.QueueThreshold - avgQueueLoad*factor
		a.scaleDownSafe = remainingKV >= p.KVSpareTrigger && remainingQueue >= p.QueueSpareTrigger
	}
	return a
}

// saturationTarget is WVA V1's CalculateSaturationTargets for a model of
// one variant whose last recommendation is met: current replicas (the
// Deployment's, ready or not), reporting ones (with metrics). A model
// whose metrics do not cover its replicas is in transition and keeps its
// count; else it grows by one on a scale-up, shrinks by one on a safe
// scale-down above one replica, or keeps the reporting count.
func saturationTarget(current, reporting int, a saturationAnalysis) int {
	switch {
	case reporting != current || a.replicas == 0:
		return current
	case a.scaleUp:
		return reporting + 1
	case a.scaleDownSafe && reporting > 1:
		return reporting - 1
	}
	return reporting
}
