package sim

import (
	"errors"
	"fmt"
	"math"
)

// TargetUtilisation is Kubernetes' HorizontalPodAutoscaler on a
// per-replica metric: an autoscaling/v2 metric of type Pods with an
// AverageValue target, as production LLM deployments run it on vLLM's
// gauges through a Prometheus adapter. At each tick it recommends what
// HPA's replica calculator would
// (pkg/controller/podautoscaler/replica_calculator.go,
// ReplicaCalculator.GetMetricReplicas and calcPlainMetricReplicas); the
// controller then applies Behavior and [Min, Max] (behavior.go), as
// HPA's normalizeDesiredReplicas does.
//
// The rule, with ready = ScaleView.Serving() and current = Serving() +
// Warming() (HPA's currentReplicas, the scale's spec.replicas, which the
// controller set at its last tick):
//   - usageRatio = the mean of Metric over the serving replicas
//     (ScaleView.Load, as stale as Autoscale.MetricDelay) / Target
//     (metricsclient.GetMetricUsageRatio).
//   - No warming replica, or usageRatio <= 1: within tolerance, 1 −
//     Tolerance <= usageRatio <= 1 + Tolerance (Tolerances.isWithin),
//     keep current; else ceil(usageRatio × ready). On a scale-down
//     warming replicas are ignored: a pod that is not ready yet is in
//     HPA's unreadyPods (groupPods), whose metrics it drops.
//   - Warming replicas and usageRatio > 1 (HPA's scaleUpWithUnready,
//     formerly rebalanceIgnored): each warming replica counts at 0 and
//     the ratio is recomputed over ready + warming. If the new ratio is
//     within tolerance or below 1 (the direction flipped), keep current;
//     else ceil(newRatio × (ready + warming)), and current if that is
//     fewer. So a fleet that is warming the replicas it asked for does
//     not ask again for the same load: HPA's guard against a second wave
//     during a cold start.
//   - Draining replicas are terminating pods (a DeletionTimestamp):
//     groupPods ignores them, and they are not in current.
//
// Where it differs from HPA:
//   - Every serving replica reports its metric: there are no missing
//     pods (HPA counts one at 0 on a scale-up and at the target on a
//     scale-down). A warming replica is not ready throughout its cold
//     start, as a Pending pod is; HPA would count a pod whose container
//     runs but whose server does not answer yet (ColdStart.Load and
//     Capture) as missing, which holds a scale-down back a little more.
//   - No CPU initialisation period (cpuInitializationPeriod,
//     delayOfInitialReadinessStatus): HPA applies those to CPU only.
//   - The mean is a float64; HPA averages int64 milli-units, truncating
//     (a difference below 0.001 of the metric's unit).
//   - One symmetric Tolerance, where autoscaling/v2 (Kubernetes 1.33 and
//     later) may set scale-up and scale-down tolerances apart; and one
//     metric, where an HPA with several takes the largest recommendation
//     (computeReplicasForMetrics).
//
// The zero value is not valid: Target must be set. Metric's zero value
// is MetricRunning, Tolerance's is HPA's 0.1.
type TargetUtilisation struct {
	// Metric is the per-replica metric the target is on; the zero value
	// is MetricRunning.
	Metric PodMetric
	// Target is the metric's target mean per serving replica (HPA's
	// target.averageValue), > 0: requests for the request counts, tokens
	// for MetricOutstanding, a fraction in (0, 1] for MetricKVUsage.
	Target float64
	// Tolerance is how far the usage ratio may stray from 1 before the
	// recommendation moves (HPA's --horizontal-pod-autoscaler-tolerance,
	// or autoscaling/v2's per-HPA tolerance); 0 means DefaultHPATolerance.
	Tolerance float64
}

// DefaultHPATolerance is TargetUtilisation.Tolerance's and
// QueueDepth.Tolerance's zero value: HPA's
// --horizontal-pod-autoscaler-tolerance, 0.1.
const DefaultHPATolerance = 0.1

// PodMetric names the per-replica gauge a TargetUtilisation averages,
// after the vLLM metric each mirrors.
type PodMetric int

const (
	// MetricRunning is vllm:num_requests_running: the requests in the
	// running list, in prefill or decoding (Load.Running).
	MetricRunning PodMetric = iota
	// MetricWaiting is vllm:num_requests_waiting: the requests queued for
	// admission (Load.Waiting).
	MetricWaiting
	// MetricHeld is the sum of the two (Load.Held): the concurrency per
	// pod that Knative's KPA targets, as a Prometheus recording rule
	// would add vLLM's two gauges.
	MetricHeld
	// MetricOutstanding is the replica's outstanding tokens: prompt
	// tokens not yet in KV plus output tokens not yet emitted
	// (Load.Outstanding), the load LeastLoaded weighs. vLLM exports no
	// such gauge; a gateway that estimates it could.
	MetricOutstanding
	// MetricKVUsage is vllm:kv_cache_usage_perc (formerly
	// vllm:gpu_cache_usage_perc): 1 − FreeBlocks/KVBlocks, the fraction of
	// KV blocks some request holds.
	MetricKVUsage
	numPodMetrics
)

// String returns the vLLM metric's name.
func (m PodMetric) String() string {
	switch m {
	case MetricRunning:
		return "vllm:num_requests_running"
	case MetricWaiting:
		return "vllm:num_requests_waiting"
	case MetricHeld:
		return "vllm:num_requests_running + vllm:num_requests_waiting"
	case MetricOutstanding:
		return "outstanding tokens"
	case MetricKVUsage:
		return "vllm:kv_cache_usage_perc"
	}
	return fmt.Sprintf("PodMetric(%d)", int(m))
}

// of is the metric of serving replica i.
func (m PodMetric) of(v *ScaleView, i int) float64 {
	l := v.Load(i)
	switch m {
	case MetricWaiting:
		return float64(l.Waiting)
	case MetricHeld:
		return float64(l.Held())
	case MetricOutstanding:
		return float64(l.Outstanding)
	case MetricKVUsage:
		total := v.KVBlocks(i)
		if total <= 0 {
			return 0
		}
		return 1 - float64(l.FreeBlocks)/float64(total)
	}
	return float64(l.Running)
}

// Validate checks the metric, the target and the tolerance.
func (p TargetUtilisation) Validate() error {
	var errs []error
	if p.Metric < 0 || p.Metric >= numPodMetrics {
		errs = append(errs, fmt.Errorf("TargetUtilisation.Metric must be one of MetricRunning, MetricWaiting, MetricHeld, MetricOutstanding, MetricKVUsage, got %d", int(p.Metric)))
	}
	switch {
	case !(p.Target > 0) || math.IsInf(p.Target, 1):
		errs = append(errs, fmt.Errorf("TargetUtilisation.Target must be > 0 and finite, got %v", p.Target))
	case p.Metric == MetricKVUsage && p.Target > 1:
		errs = append(errs, fmt.Errorf("TargetUtilisation.Target must be in (0, 1] for MetricKVUsage (a fraction of the KV blocks), got %v", p.Target))
	}
	if err := validHPATolerance("TargetUtilisation", p.Tolerance); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Desired is HPA's recommendation for a Pods metric (see
// TargetUtilisation).
func (p TargetUtilisation) Desired(v *ScaleView) int {
	ready, unready := v.Serving(), v.Warming()
	var sum float64
	for i := range ready {
		sum += p.Metric.of(v, i)
	}
	return podsReplicas(sum, ready, unready, ready+unready, p.Target, hpaTolerance(p.Tolerance))
}

// podsReplicas is ReplicaCalculator.calcPlainMetricReplicas over plain
// numbers, for pods that all report when ready: sum is the metric summed
// over the ready pods, unready the pods not ready (which report
// nothing), current HPA's currentReplicas.
func podsReplicas(sum float64, ready, unready, current int, target, tol float64) int {
	if ready == 0 {
		// HPA: "did not receive metrics for targeted pods", an error that
		// leaves the count as it is.
		return current
	}
	ratio := sum / float64(ready) / target
	if unready == 0 || !(ratio > 1) {
		if hpaWithin(ratio, tol) {
			return current
		}
		return hpaCeil(ratio * float64(ready))
	}
	// A scale-up with unready pods: they count at 0.
	all := ready + unready
	again := sum / float64(all) / target
	if hpaWithin(again, tol) || again < 1 {
		return current
	}
	if n := hpaCeil(again * float64(all)); n >= current {
		return n
	}
	return current
}

// hpaWithin is Tolerances.isWithin for one tolerance both ways.
func hpaWithin(ratio, tol float64) bool {
	return 1-tol <= ratio && ratio <= 1+tol
}

// hpaCeil is ceil(x) as a count, capped at MaxReplicas (HPA caps at
// MaxInt32) so that no float overflows an int; NaN is MaxReplicas too.
func hpaCeil(x float64) int {
	switch {
	case !(x <= MaxReplicas):
		return MaxReplicas
	case x <= 0:
		return 0
	}
	return int(math.Ceil(x))
}

// hpaTolerance is a Tolerance with its default.
func hpaTolerance(t float64) float64 {
	if t == 0 {
		return DefaultHPATolerance
	}
	return t
}

// validHPATolerance checks a policy's Tolerance field.
func validHPATolerance(policy string, t float64) error {
	if !(t >= 0) || math.IsInf(t, 1) {
		return fmt.Errorf("%s.Tolerance must be >= 0 and finite (0 means %v), got %v", policy, DefaultHPATolerance, t)
	}
	return nil
}
