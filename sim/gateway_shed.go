package sim

import (
	"errors"
	"fmt"
	"math"
)

// llm-d's saturation detector defaults (see Saturation).
const (
	DefaultShedQueueDepth = 5
	DefaultShedKVUtil     = 0.8
)

// Saturation sheds load by a saturation signal, as llm-d's gateway
// (the Gateway API Inference Extension's endpoint picker, which llm-d's
// inference scheduler extends) does with its saturation detector:
// kubernetes-sigs/gateway-api-inference-extension,
// pkg/epp/saturationdetector/saturationdetector.go at commit
// 32ddd96c3f03aa1a583e3a5dd8eb404b2c12720a (Detector.IsSaturated, before
// the flow controller and the later utilization detector's graded
// score). A replica has good capacity when its waiting queue is at most
// QueueDepth and its KV cache utilisation (the blocks requests hold, of
// its KV blocks, as vLLM's kv_cache_usage_perc) is at most KVUtil; the
// pool is saturated when no replica has good capacity, and a request
// sent then is shed at once (StatusShed; the EPP answers 429 to a
// sheddable request). The detector's defaults are QueueDepthThreshold 5
// and KVCacheUtilThreshold 0.8 (DefaultShedQueueDepth,
// DefaultShedKVUtil). Where the EPP sheds only requests whose
// criticality is Sheddable, this sheds every request.
//
// The signal is the router's: each replica's load as fresh as
// Fleet.SignalDelay allows, read through the view of the router instance
// the request is dealt to (View.Load), so with stale signals the gateway
// sheds by what it last saw plus its own decisions since. (The detector
// counts a replica whose metrics are older than its staleness threshold,
// 200 ms by default, as having no capacity; here a signal is as stale as
// SignalDelay and always read.)
//
// The zero value (both thresholds 0) sheds nothing.
type Saturation struct {
	// QueueDepth is the waiting requests above which a replica has no
	// good capacity; 0 means the queue is not read.
	QueueDepth int
	// KVUtil is the KV cache utilisation in (0, 1] above which a replica
	// has no good capacity; 0 means it is not read.
	KVUtil float64
}

// On reports whether a threshold is set.
func (s Saturation) On() bool { return s.QueueDepth != 0 || s.KVUtil != 0 }

// Validate refuses negative thresholds and a utilisation above 1,
// naming the field.
func (s Saturation) Validate() error { return s.validate("Saturation") }

func (s Saturation) validate(field string) error {
	var errs []error
	if s.QueueDepth < 0 {
		errs = append(errs, fmt.Errorf("sim: %s.QueueDepth must be >= 0 (0 means the queue is not read), got %d", field, s.QueueDepth))
	}
	if !(s.KVUtil >= 0 && s.KVUtil <= 1) {
		errs = append(errs, fmt.Errorf("sim: %s.KVUtil must be in [0, 1] (0 means KV utilisation is not read), got %v", field, s.KVUtil))
	}
	return errors.Join(errs...)
}

// hasCapacity reports whether a replica of kvBlocks blocks at load l has
// good capacity.
func (s Saturation) hasCapacity(l Load, kvBlocks int) bool {
	if s.QueueDepth > 0 && l.Waiting > s.QueueDepth {
		return false
	}
	if s.KVUtil > 0 && kvBlocks > 0 {
		used := 1 - float64(l.FreeBlocks)/float64(kvBlocks)
		if used > s.KVUtil && math.Abs(used-s.KVUtil) > 1e-12 {
			return false
		}
	}
	return true
}

// saturated reports whether no replica has good capacity, by the signal
// the router reads.
func (r *runner) saturated() bool {
	for p := range r.routableLen() {
		i := r.routableAt(p)
		var l Load
		if d := r.cfg.Fleet.SignalDelay; d > 0 {
			l = r.frontend().load(r, i, d)
		} else {
			l = r.reps[i].load(r.now)
		}
		if r.gw.shed.hasCapacity(l, r.reps[i].eng.Config().KVBlocks) {
			return false
		}
	}
	return true
}
