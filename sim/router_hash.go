package sim

import "github.com/servesim/servesim/workload"

// ConsistentHash sends every request with the same key to the same replica:
// the key is the request's conversation (session stickiness, as Envoy's
// ring hash or an ingress's session affinity on a user id) when it has
// one, else its first prefix unit (prefix affinity without any load
// signal). Jump consistent hashing (Lamping and Veach, 2014) maps keys to
// replicas, so resizing a fleet moves only 1/N of the keys. A request with
// neither key goes round robin.
type ConsistentHash struct{}

// Route hashes the request's session or first prefix unit.
func (ConsistentHash) Route(r *workload.Request, v *View) int {
	var key uint64
	switch {
	case r.Conversation != 0:
		key = r.Conversation
	case len(r.PrefixHashes) > 0:
		key = r.PrefixHashes[0] ^ 0x9e3779b97f4a7c15
	default:
		return v.Routed() % v.Replicas()
	}
	return jump(splitmix(key), v.Replicas())
}

// splitmix is SplitMix64's finaliser: a key's bits spread over the word.
func splitmix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// jump is Lamping and Veach's jump consistent hash of key into n buckets.
func jump(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
