package sim

import "time"

// ScaleView is an autoscaling policy's read-only view of the fleet at one
// of the controller's ticks (Autoscaler.Desired): the clock, how many
// replicas serve, warm and drain, and each serving replica's load, as
// stale as Autoscale.MetricDelay makes it. Reading it changes no
// replica. Neither the view nor what it returns may be kept after the
// call.
type ScaleView struct {
	r *runner
	// The loads sampled at the last refresh, by replica index (a replica
	// that began serving since held nothing then: a zero Load).
	samples []Load
	at      time.Duration
	sampled bool
}

// Now is the tick's instant, from the start of the run.
func (v *ScaleView) Now() time.Duration { return v.r.now }

// Serving is the number of replicas serving: in the router's view,
// positions 0 to Serving()-1 here.
func (v *ScaleView) Serving() int { return len(v.r.scale.routable) }

// Changed is the last instant the serving replicas changed: one began
// serving or left routing (0 when none has since the start). What ended
// after Changed() was served by the fleet as it is, in part.
func (v *ScaleView) Changed() time.Duration { return v.r.scale.changed }

// Warming is the number of replicas requested and not yet serving.
func (v *ScaleView) Warming() int { return v.r.scale.warming }

// Draining is the number of replicas that left routing and still hold
// requests.
func (v *ScaleView) Draining() int { return v.r.scale.draining }

// Load is serving replica i's load (0 <= i < Serving()), as fresh as
// Autoscale.MetricDelay allows: the loads are sampled together, and
// sampled again when read at least MetricDelay after the last sample.
func (v *ScaleView) Load(i int) Load {
	r := v.r
	j := int(r.scale.routable[i])
	d := r.scale.cfg.MetricDelay
	if d == 0 {
		return r.reps[j].load(r.now)
	}
	if !v.sampled || r.now-v.at >= d {
		if len(v.samples) < len(r.reps) {
			v.samples = append(v.samples, make([]Load, len(r.reps)-len(v.samples))...)
		}
		for _, k := range r.scale.routable {
			v.samples[k] = r.reps[k].load(r.now)
		}
		v.at, v.sampled = r.now, true
	}
	if j >= len(v.samples) {
		return Load{}
	}
	return v.samples[j]
}

// KVBlocks is serving replica i's number of KV blocks: with
// Load(i).FreeBlocks, its KV cache usage as vLLM reports it
// (vllm:kv_cache_usage_perc, 1 − free/total).
func (v *ScaleView) KVBlocks(i int) int {
	return v.r.reps[v.r.scale.routable[i]].eng.Config().KVBlocks
}

// Recent is what ended in (Now() − lookback, Now()]: every request,
// measured or not, judged by its own SLO (see Recent). The runner keeps
// the ends only for a policy that declares how far back it reads, with a
// method History() time.Duration (see Autoscaler), and only that far: a
// lookback beyond History reads the History kept, and a policy that
// declares none sees nothing (Ended 0). A lookback <= 0 sees nothing.
func (v *ScaleView) Recent(lookback time.Duration) Recent {
	return v.r.recent.recent(v.r.now, lookback)
}

// SLO is the run's SLO (Config.SLO, its zero fields defaulted), the one a
// record without a class of its own is judged by.
func (v *ScaleView) SLO() SLO { return v.r.scale.slo }
