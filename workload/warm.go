package workload

// SharedPrompts are the configuration's shared system prompts as requests
// (one per group, group 0 first, each of PrefixTokens tokens carrying its
// group's hash ids): what a cache that had served the workload for a while
// holds, for a warm start (sim.Config.Warm). Only full blocks are shared,
// so a prompt shorter than a block, or a configuration without sharing,
// gives none. The requests are never offered: their IDs, arrivals and
// output lengths are zero.
func (p PrefixReuse) SharedPrompts() []Request {
	b := newBlockIDs(p)
	if b.shared == 0 || p.Probability == 0 {
		return nil
	}
	out := make([]Request, p.Groups)
	for g := range out {
		ids := make([]uint64, b.shared)
		for k := range ids {
			ids[k] = uint64(g)*uint64(b.shared) + uint64(k)
		}
		out[g] = Request{InputTokens: b.shared * p.block(), PrefixHashes: ids, PrefixBlockTokens: p.block()}
	}
	return out
}
