package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// externalPerPodReplicas replays the External AverageValue cases of
// Kubernetes' replica calculator tests
// (pkg/controller/podautoscaler/replica_calculator_test.go, kubernetes/
// kubernetes@00067268; the configurable tolerance case from 1.33's), the
// metric's sum in milli-units.
func TestExternalPerPodReplicasReplaysHPA(t *testing.T) {
	for _, c := range []struct {
		name        string
		usage       float64
		status      int
		target, tol float64
		want        int
	}{
		// 8600 / (2150 × 3) = 1.33: ceil(8600 / 2150).
		{"TestReplicaCalcScaleUpPerPodCMExternal", 8600, 3, 2150, 0.1, 4},
		// 8600 / (2867 × 5) = 0.6: ceil(2.9996).
		{"TestReplicaCalcScaleDownPerPodCMExternal", 8600, 5, 2867, 0.1, 3},
		// 8600 / (2900 × 3) = 0.989: within.
		{"TestReplicaCalcTolerancePerPodCMExternal", 8600, 3, 2900, 0.1, 3},
		// 8600 / (2800 × 3) = 1.024: outside a 1 % scale-up tolerance.
		{"TestReplicaCalcConfigurableTolerancePerPodCMExternal", 8600, 3, 2800, 0.01, 4},
	} {
		require.Equal(t, c.want, externalPerPodReplicas(c.usage, c.status, c.target, c.tol), c.name)
	}
	// Not upstream: the count of ready replicas plays no part (statusReplicas
	// counts the warming), an empty queue asks for none (the controller's
	// Min holds one), and a recommendation beyond an int is capped.
	require.Equal(t, 5, externalPerPodReplicas(100, 2, 20, 0.1))
	require.Equal(t, 0, externalPerPodReplicas(0, 4, 20, 0.1))
	require.Equal(t, MaxReplicas, externalPerPodReplicas(1e300, 1, 1e-300, 0.1))
}

func TestQueueDepthValidate(t *testing.T) {
	require.NoError(t, QueueDepth{Target: 5}.Validate())
	for _, c := range []struct {
		p    QueueDepth
		want string
	}{
		{QueueDepth{}, "QueueDepth.Target must be > 0"},
		{QueueDepth{Target: -3}, "QueueDepth.Target must be > 0"},
		{QueueDepth{Target: math.Inf(1)}, "QueueDepth.Target must be > 0 and finite"},
		{QueueDepth{Target: 5, Tolerance: -1}, "QueueDepth.Tolerance must be >= 0"},
	} {
		require.ErrorContains(t, c.p.Validate(), c.want, "%+v", c.p)
	}
	cfg := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: QueueDepth{}, Max: 2}}}
	require.ErrorContains(t, cfg.Validate(), "Fleet.Autoscale.Policy: QueueDepth.Target must be > 0")
}

// queueRecorder passes on a policy's recommendation and records the
// fleet's waiting queue (over the serving replicas) at each tick.
type queueRecorder struct {
	of      Autoscaler
	waiting *[]int
}

func (q queueRecorder) Desired(v *ScaleView) int {
	w := 0
	for i := range v.Serving() {
		w += v.Load(i).Waiting
	}
	*q.waiting = append(*q.waiting, w)
	return q.of.Desired(v)
}

// QueueDepth under a load one replica cannot carry: 10 requests/s of
// about 10 s each, L ≈ 100 in flight against one replica's 32 slots. No
// request can take less than 199 decode steps of 45 ms (9 s), so by the
// first tick (15 s) each slot has finished at most one: the replica has
// admitted at most 64 and the rest of the arrivals wait. The queue asks
// for ceil(waiting / Target) replicas. With a Target above any queue the
// run can form (it offers 6,000 requests), the fleet never grows.
func TestQueueDepthFollowsTheQueue(t *testing.T) {
	const rate = 10.0
	horizon := 10 * time.Minute
	run := func(p QueueDepth) (Summary, []int) {
		var waiting []int
		cfg := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: queueRecorder{p, &waiting}, Max: 8}},
			Window: Window{Horizon: horizon}}
		sum, err := Run(cfg, hpaLoad(t, rate, horizon), nil)
		require.NoError(t, err)
		return sum, waiting
	}

	sum, waiting := run(QueueDepth{Target: 20})
	first := sum.Scale.Timeline[0]
	require.Equal(t, 15*time.Second, first.At)
	require.InDelta(t, rate*15, first.Arrived, 4*math.Sqrt(rate*15), "Poisson arrivals")
	require.GreaterOrEqual(t, waiting[0], first.Arrived-64, "one replica admits at most 2 × 32 in 15 s")
	require.Equal(t, min(8, int(math.Ceil(float64(waiting[0])/20))), first.Desired)
	require.Greater(t, first.Desired, 1)
	require.Equal(t, first.Desired, first.Serving, "no cold start: they serve at once")
	require.GreaterOrEqual(t, sum.Scale.PeakReplicas, 4, "enough slots for L ≈ 100: ceil(100 / 32)")

	sum, waiting = run(QueueDepth{Target: 1e6})
	require.Greater(t, waiting[0], 0, "the same queue forms")
	require.Zero(t, sum.Scale.Joins)
	for _, s := range sum.Scale.Timeline {
		require.Equal(t, 1, s.Desired, "at %v", s.At)
	}
}
