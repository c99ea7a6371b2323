package sim

import (
	"fmt"

	"github.com/servesim/servesim/workload"
)

// PrefixThreshold is llm-d's prefix-based P/D decider
// (llm-d-inference-scheduler, pkg/plugins/profile,
// PrefixDisaggregationDecider.isDisaggregationRequired): a request is
// prefilled remotely when the part of its prompt its decode replica's
// cache does not hold is at least NonCachedTokens tokens; a shorter
// uncached suffix is prefilled by the decode replica itself. What the
// cache holds is read through the router's CacheView (View.CachedPrefix
// of the decode replica the router chose), as llm-d reads its
// prefix-cache scorer's match for the chosen pod.
//
// NonCachedTokens <= 0 disaggregates nothing, as llm-d's default of 0
// does ("no disaggregation in case of non cached tokens number is 0"):
// the zero value is NeverRemote.
type PrefixThreshold struct {
	NonCachedTokens int
}

// Remote reports whether the prompt's suffix uncached at decode replica
// d reaches the threshold.
func (p PrefixThreshold) Remote(r *workload.Request, d int, v *View) bool {
	if p.NonCachedTokens <= 0 {
		return false
	}
	return r.InputTokens-v.CachedPrefix(d) >= p.NonCachedTokens
}

// String names the decider and its threshold.
func (p PrefixThreshold) String() string {
	return fmt.Sprintf("prefix threshold %d tokens", p.NonCachedTokens)
}
