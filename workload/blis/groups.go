package blis

import (
	"fmt"

	"github.com/servesim/servesim/workload"
)

// TraceV2 says a request's prefix with one prefix_group and its length;
// servesim's requests say it with hash ids, one per PrefixBlockTokens
// tokens, which may share any leading run. blisGroupsOf maps one onto the
// other: a request's group is the longest leading run of its ids (within
// its prompt) that another request also starts with, so requests of a
// group share exactly what they share in servesim. What two requests of
// different groups share is lost (blisGroups.unshared): BLIS generates
// each group's prefix tokens apart.

// blisGroups is each request's group name and prefix length in tokens
// ("" and 0 for none), the number of groups, and the requests that lose
// sharing.
type blisGroups struct {
	names            []string
	tokens           []int
	groups, unshared int
}

// prefixChain calls visit with the chain key of each leading run of r's
// ids that lies within its prompt, shortest first. Keys are chained
// hashes: equal keys mean equal runs of ids at equal block sizes.
func prefixChain(r workload.Request, visit func(k int, key uint64)) {
	p := r.PrefixBlockTokens
	if p <= 0 || len(r.PrefixHashes) == 0 {
		return
	}
	key := chainKey(0x0b115, uint64(p))
	for k := range min(len(r.PrefixHashes), r.InputTokens/p) {
		key = chainKey(key, r.PrefixHashes[k])
		visit(k+1, key)
	}
}

// chainKey mixes a parent key and an id (a SplitMix64 finaliser).
func chainKey(parent, id uint64) uint64 {
	h := parent ^ (id + 0x9e3779b97f4a7c15 + parent<<6 + parent>>2)
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func blisGroupsOf(reqs workload.Requests) blisGroups {
	count := map[uint64]int{}
	for _, r := range reqs {
		prefixChain(r, func(_ int, key uint64) { count[key]++ })
	}
	g := blisGroups{names: make([]string, len(reqs)), tokens: make([]int, len(reqs))}
	owner := map[uint64]string{} // the group of the first request through a shared key
	mixed := map[uint64]bool{}   // a shared key that requests of two groups pass through
	seen := map[string]bool{}
	for i, r := range reqs {
		var shared []uint64
		prefixChain(r, func(k int, key uint64) {
			if count[key] >= 2 { // counts fall along a chain: shared keys lead
				shared = append(shared, key)
				g.tokens[i] = k * r.PrefixBlockTokens
			}
		})
		if len(shared) == 0 {
			continue
		}
		name := fmt.Sprintf("p%d-%016x", r.PrefixBlockTokens, shared[len(shared)-1])
		g.names[i] = name
		if !seen[name] {
			seen[name] = true
			g.groups++
		}
		for _, key := range shared {
			if o, ok := owner[key]; !ok {
				owner[key] = name
			} else if o != name {
				mixed[key] = true
			}
		}
	}
	for _, r := range reqs {
		lost := false
		prefixChain(r, func(_ int, key uint64) { lost = lost || mixed[key] })
		if lost {
			g.unshared++
		}
	}
	return g
}
