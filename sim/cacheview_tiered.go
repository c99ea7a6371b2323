package sim

import "github.com/servesim/servesim/workload"

// TieredView reads, for each replica, the prompt's leading blocks its
// prefix cache holds and then those that follow in its host tier and in
// the shared store (Fleet.HostTier, Fleet.SharedStore): the tokens the
// replica would not compute, as its engine's lookup would find them at
// the arrival (a block of the tiers counts though loading it takes
// time). It is ExactView with the tiers below HBM in sight, the ideal of
// a control plane that indexes them: vLLM's offloading connector
// publishes its host blocks as KV events of medium "CPU"
// (offloading/scheduler.py:882-901), which llm-d's KV-cache indexer can
// score, and LMCache's controller answers which instance holds the
// longest prefix (cache_controller/controllers/kv_controller.py). A
// block of the shared store counts at every replica alike, so the store
// changes a router's choice only where a replica's HBM or host tier holds
// more of the prompt. Without tiers it reads as ExactView. Reading it
// changes nothing (no block's recency is touched). It has no fields.
type TieredView struct{}

// Validate accepts TieredView: it has nothing to check.
func (TieredView) Validate() error { return nil }

func (TieredView) state(*runner) (cacheState, error) { return tieredState{}, nil }

type tieredState struct{}

func (tieredState) cached(r *runner, i int, req *workload.Request) int {
	keys := r.view.prefixKeys(i)
	if len(keys) == 0 {
		return 0
	}
	rep := &r.reps[i]
	rep.run().SyncTo(r.now)
	n := rep.eng.CachedKeys(keys) / rep.eng.Config().BlockSize
	if t := r.tiers; t != nil {
		p := &t.ports[i]
		p.flushIn(keys) // decode blocks put off
		h, s := p.hostLRU(), t.shared
		for _, k := range keys[n:] {
			if !(h != nil && h.Contains(k) || s != nil && s.Contains(k)) {
				break
			}
			n++
		}
	}
	return n * rep.eng.Config().BlockSize
}

func (tieredState) routed(*runner, int, *workload.Request) {}
func (tieredState) added(*runner, int)                     {}
