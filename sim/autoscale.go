package sim

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Autoscale lets replicas join and leave the fleet while the run goes on,
// as a Kubernetes Deployment under an autoscaler does (Fleet.Autoscale).
// The zero value (no Policy) is a fixed fleet: Fleet.Replicas serve
// throughout, and every byte of the run is what it was without.
//
// A controller ticks every Interval (15 s, Kubernetes' HPA sync period
// and llm-d's variant autoscaler's loop) from Interval on. At each tick
// it asks the Policy for the fleet's size (serving plus warming
// replicas), clamps it to [Min, Max], and acts on the difference:
//   - A join requests a replica at the tick: it warms for ColdStart and
//     then serves, with an empty prefix cache (a new pod: Config.Warm
//     warms only the replicas the run starts with). Every join builds a
//     copy of the fleet's first replica (Fleet.Replicas[0], or
//     Config.Engine and Model for the single replica).
//   - A leave picks a warming replica if there is one, the most recently
//     requested first (it stops costing at once), or else the serving
//     replica that became ready last: a ReplicaSet's choice of the pod to
//     delete (Kubernetes' controller.ActivePodsWithRanks: not ready
//     before ready, then the shortest time ready first). The replica
//     drains as Drain says (see Drain) and stops costing when it holds
//     nothing.
//
// A replica that joins is a new replica, with a new index (Record.Replica
// and Summary.Replicas name it): an index is never reused, as a pod's name
// is not, so every replica's share of the run stays its own.
//
// Not yet supported, and refused by Validate: scale to zero (an arrival
// at a fleet of none needs an activator queue, Knative's or KEDA-HTTP's),
// a disaggregated fleet's pools (Fleet.Prefill), and KV tiers
// (Fleet.HostTier, Fleet.SharedStore).
type Autoscale struct {
	// Policy recommends the fleet's size at each tick; nil means no
	// autoscaling. Like a Router it is configuration: whatever it must
	// know it reads from the ScaleView.
	Policy Autoscaler
	// Min and Max bound the fleet's size, serving plus warming replicas,
	// as HPA's minReplicas and maxReplicas do. Min 0 means 1 (there is no
	// scale to zero). Max must be >= Min and >= len(Fleet.Replicas), and
	// at most MaxReplicas. The run starts with Fleet.Replicas serving,
	// which must be at least Min.
	Min, Max int
	// Interval is the controller's period; 0 means DefaultScaleInterval.
	Interval time.Duration
	// Behavior is what the controller does with each recommendation
	// before it acts, as Kubernetes' HPA does (stabilisation windows, rate
	// limits: behavior.go). The zero value acts on every recommendation
	// as it is; HPABehavior() is the autoscaling/v2 defaults.
	Behavior Behavior
	// MetricDelay is how stale the loads a Policy reads are: the
	// controller's samples are refreshed when read at least MetricDelay
	// after the last refresh (a metrics pipeline's scrape and query
	// window; Kubernetes' metrics reach the HPA every 15 s or so). 0 means
	// fresh loads at every tick.
	MetricDelay time.Duration
	// ColdStart is how long a replica requested by a join takes to serve.
	ColdStart ColdStart
	// Drain is what a leaving replica does with what it holds.
	Drain Drain
	// MaxJoins bounds the replicas the run may add, each of which keeps
	// its share of the summary; 0 means DefaultMaxJoins. A tick that would
	// exceed it is an error, not a silent cap.
	MaxJoins int
}

// DefaultScaleInterval is Autoscale.Interval's zero value: Kubernetes'
// HPA sync period (--horizontal-pod-autoscaler-sync-period, 15 s), which
// llm-d's variant autoscaler's loop shares.
const DefaultScaleInterval = 15 * time.Second

// DefaultMaxJoins is Autoscale.MaxJoins's zero value: a join every 15 s
// tick for a day is 5,760, so a day's churn fits.
const DefaultMaxJoins = 10_000

// MaxBehaviorTicks bounds the recommendations the controller keeps for
// Autoscale.Behavior: its longest window or period over Interval. A 300 s
// window at 15 s ticks keeps 20.
const MaxBehaviorTicks = 100_000

// On reports whether the fleet autoscales.
func (a Autoscale) On() bool { return a.Policy != nil }

// WithDefaults fills in the zero fields that have defaults.
func (a Autoscale) WithDefaults() Autoscale {
	if a.Min == 0 {
		a.Min = 1
	}
	if a.Interval == 0 {
		a.Interval = DefaultScaleInterval
	}
	if a.MaxJoins == 0 {
		a.MaxJoins = DefaultMaxJoins
	}
	return a
}

// ColdStart is what a replica does between the tick that requests it and
// its first request, each phase declared (the chapter lists them as what
// a cold test includes; vLLM logs the last three): a node and the pod's
// image (Provision), the weights into the accelerators' memory (Load),
// graph capture and compilation, cached or not (Capture). Jitter adds a
// uniform draw from [0, Jitter) to each replica's total, from the run's
// stream "sim/autoscale". Published figures for a 70B-class model: 1 to
// 2 minutes on a node that has the weights cached, 4 to 7 minutes from a
// fresh node (llm-d's variant autoscaler says pod startup takes 2 to 7
// minutes; BLIS, the llm-d simulator, models 240 s ± 30 s from node to
// serving). The zero value is a replica that serves at once.
type ColdStart struct {
	Provision, Load, Capture time.Duration
	Jitter                   time.Duration
}

// Total is the cold start before Jitter.
func (c ColdStart) Total() time.Duration { return c.Provision + c.Load + c.Capture }

// MaxColdStart bounds each ColdStart phase and its Jitter: a day.
const MaxColdStart = 24 * time.Hour

// Drain is what a leaving replica does. It leaves routing at once (the
// llm-d endpoint picker drops a pod that is terminating; Kubernetes takes
// it out of the Service's endpoints), and then:
//   - HandBack false (the zero value): it keeps every request it holds
//     and serves it, as vLLM does on SIGTERM with a shutdown timeout
//     (engine core: "Draining N in-flight requests"), and BLIS's WAIT
//     drain.
//   - HandBack true: the requests it holds that were never scheduled go
//     back to the router, now, keeping their arrival instant (a gateway's
//     retry of a request the pod refused; BLIS's REDIRECT drain); it
//     serves the rest. vLLM never hands a request back.
//   - Timeout > 0: whatever it still holds Timeout after the leave is
//     aborted (StatusErrored, "drained"), as vLLM aborts every unfinished
//     request when its --shutdown-timeout runs out (its default, 0, aborts
//     at once) and as Kubernetes kills a pod at the end of its
//     terminationGracePeriodSeconds (30 s by default). 0 means no
//     deadline: it finishes everything.
//
// It stops costing when it holds nothing.
type Drain struct {
	Timeout  time.Duration
	HandBack bool
}

// Autoscaler is the seam an autoscaling policy fills: it recommends the
// fleet's size (serving plus warming replicas) at each of the
// controller's ticks, from what the ScaleView shows. The controller
// clamps it to [Autoscale.Min, Autoscale.Max]. A new policy is one type
// with this method, in a file of its own.
//
// A policy that reads the requests that ended recently
// (ScaleView.Recent) declares how far back it reads with a method
// History() time.Duration, in (0, MaxHistory]: the runner keeps the ends
// of that long and no longer, and keeps none for a policy without the
// method (or one that returns 0).
type Autoscaler interface {
	Desired(v *ScaleView) int
}

func (a Autoscale) validate(f Fleet, c Config) error {
	if a.Policy == nil {
		if !reflect.ValueOf(a).IsZero() {
			return errors.New("sim: Fleet.Autoscale is set but has no Policy: set one, or leave Autoscale zero for a fixed fleet")
		}
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("sim: Fleet.Autoscale."+format, args...))
	}
	n := len(c.replicas())
	switch {
	case a.Min < 0:
		bad("Min must be >= 0 (0 means 1), got %d", a.Min)
	case a.Max < max(a.Min, 1):
		bad("Max must be >= Min (%d) and >= 1, got %d", max(a.Min, 1), a.Max)
	case a.Max > MaxReplicas:
		bad("Max must be <= MaxReplicas (%d), got %d", MaxReplicas, a.Max)
	case n < max(a.Min, 1) || n > a.Max:
		bad("Min and Max must bound the replicas the run starts with (Fleet.Replicas: %d), got [%d, %d]", n, max(a.Min, 1), a.Max)
	}
	if a.Interval < 0 || a.Interval > 24*time.Hour {
		bad("Interval must be in [0, 24h] (0 means %v), got %v", DefaultScaleInterval, a.Interval)
	}
	if err := a.Behavior.validate("Fleet.Autoscale.Behavior"); err != nil {
		errs = append(errs, fmt.Errorf("sim: %w", err))
	} else if iv := a.WithDefaults().Interval; iv > 0 {
		// The controller keeps a recommendation a tick over the longest
		// window: bound that memory.
		longest := max(a.Behavior.ScaleUp.Window, a.Behavior.ScaleDown.Window, a.Behavior.ScaleUp.longestPeriod(), a.Behavior.ScaleDown.longestPeriod())
		if longest/iv > MaxBehaviorTicks {
			bad("Behavior keeps %d ticks of Interval %v (its longest window or period is %v), more than MaxBehaviorTicks (%d): lengthen Interval or shorten the window", longest/iv, iv, longest, MaxBehaviorTicks)
		}
	}
	if a.MetricDelay < 0 || a.MetricDelay > 24*time.Hour {
		bad("MetricDelay must be in [0, 24h] (0 means fresh loads), got %v", a.MetricDelay)
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"Provision", a.ColdStart.Provision}, {"Load", a.ColdStart.Load}, {"Capture", a.ColdStart.Capture}, {"Jitter", a.ColdStart.Jitter}} {
		if p.d < 0 || p.d > MaxColdStart {
			bad("ColdStart.%s must be in [0, %v], got %v", p.name, MaxColdStart, p.d)
		}
	}
	if a.Drain.Timeout < 0 || a.Drain.Timeout > 24*time.Hour {
		bad("Drain.Timeout must be in [0, 24h] (0 means no deadline), got %v", a.Drain.Timeout)
	}
	if a.MaxJoins < 0 || a.MaxJoins > MaxReplicas {
		bad("MaxJoins must be in [0, MaxReplicas (%d)] (0 means %d), got %d", MaxReplicas, DefaultMaxJoins, a.MaxJoins)
	}
	var perr error
	if v, ok := a.Policy.(interface{ Validate() error }); ok {
		if perr = v.Validate(); perr != nil {
			bad("Policy: %w", perr)
		}
	}
	if h, ok := a.Policy.(interface{ History() time.Duration }); ok && perr == nil {
		if d := h.History(); d < 0 || d > MaxHistory {
			bad("Policy: History() must be in [0, MaxHistory (%v)], got %v", MaxHistory, d)
		}
	}
	if f.Prefill.On() {
		bad("Policy with a prefill pool (Fleet.Prefill): autoscaling a disaggregated fleet's pools is not supported yet")
	}
	if f.HostTier.On() || f.SharedStore.On() {
		bad("Policy with KV tiers (Fleet.HostTier, Fleet.SharedStore): autoscaling a fleet with KV tiers is not supported yet")
	}
	return errors.Join(errs...)
}
