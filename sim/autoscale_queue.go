package sim

import (
	"errors"
	"fmt"
	"math"
)

// QueueDepth is KEDA's Prometheus scaler on the fleet's waiting queue,
// sum(vllm:num_requests_waiting), with Target as its threshold: the
// scaler vLLM's production-stack KEDA tutorial sets up and KServe's LLM
// autoscaling (KEDA on vLLM's metrics) offers. KEDA turns the trigger
// into an HPA with an External metric and an AverageValue target
// (metricType's default), so from one replica up it is HPA's
// ReplicaCalculator.GetExternalPerPodMetricReplicas
// (pkg/controller/podautoscaler/replica_calculator.go):
//   - usage = the waiting requests summed over the serving replicas
//     (ScaleView.Load, as stale as Autoscale.MetricDelay);
//   - usageRatio = usage / (Target × statusReplicas), where statusReplicas
//     is the scale's status.replicas (computeStatusForExternalMetric
//     passes it): the pods the ReplicaSet keeps and is not deleting
//     (controller.FilterActivePods), serving and warming replicas here.
//     A warming replica has no queue yet but counts in the denominator;
//   - within tolerance, 1 − Tolerance <= usageRatio <= 1 + Tolerance,
//     keep statusReplicas; else ceil(usage / Target), whatever the count
//     of ready replicas. Unlike a Pods metric (TargetUtilisation) nothing
//     holds back a second wave while the first warms: the queue keeps
//     growing until the new replicas serve, and so does the
//     recommendation (Behavior's rate limits are the brake).
//
// A draining replica's queue is not in the sum: a terminating pod leaves
// its Service's endpoints, and with them a ServiceMonitor's scrape.
// Neither is a Gateway's queue, which no vLLM gauge reports.
//
// Out of scope: KEDA's own 0 ↔ 1 activation (activationThreshold,
// pollingInterval, cooldownPeriod, idleReplicaCount), since Autoscale
// has no scale to zero (Min >= 1, as KEDA's HPA's minReplicas is); the
// cooldown governs only the last replica, and between 1 and N the HPA's
// stabilisation window does (Autoscale.Behavior).
//
// The zero value is not valid: Target must be set. Tolerance's zero
// value is HPA's 0.1 (DefaultHPATolerance).
type QueueDepth struct {
	// Target is the waiting requests per replica the fleet aims at (the
	// trigger's threshold, the HPA's target.averageValue), > 0.
	Target float64
	// Tolerance is as TargetUtilisation.Tolerance; 0 means
	// DefaultHPATolerance.
	Tolerance float64
}

// Validate checks the target and the tolerance.
func (p QueueDepth) Validate() error {
	var errs []error
	if !(p.Target > 0) || math.IsInf(p.Target, 1) {
		errs = append(errs, fmt.Errorf("QueueDepth.Target must be > 0 and finite, got %v", p.Target))
	}
	if err := validHPATolerance("QueueDepth", p.Tolerance); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Desired is HPA's recommendation for an External metric with an
// AverageValue target (see QueueDepth).
func (p QueueDepth) Desired(v *ScaleView) int {
	waiting := 0
	for i := range v.Serving() {
		waiting += v.Load(i).Waiting
	}
	return externalPerPodReplicas(float64(waiting), v.Serving()+v.Warming(), p.Target, hpaTolerance(p.Tolerance))
}

// externalPerPodReplicas is
// ReplicaCalculator.GetExternalPerPodMetricReplicas over plain numbers:
// usage is the external metric's sum, status HPA's statusReplicas.
func externalPerPodReplicas(usage float64, status int, target, tol float64) int {
	if hpaWithin(usage/(target*float64(status)), tol) {
		return status
	}
	return hpaCeil(usage / target)
}
