package workload

// FleetLowReuse and FleetHighReuse are the prefix workloads of the routing
// experiment: a fleet of 4 Atlas TP4 replicas, each with a KV pool of
// 28,672 blocks of 16 tokens = 458,752 tokens, 1,835,008 for the fleet.
// Both hash per 16 tokens, the engine's KV block (vLLM hashes each full
// block), so a prefix cache hit is counted to the block. Each request is
// its group's shared prefix followed by its sampled input, a suffix of its
// own; the arithmetic below takes 500-token suffixes (Fixed(500, 200), say)
// and the Atlas prefill cost 20 + 0.035·n ms for n tokens computed alone.
var (
	// FleetLowReuse: three requests in four have a private prompt; the
	// fourth shares one of 64 equally popular 512-token system prompts.
	// Routing cannot gain much here, for two reasons. The shared working
	// set is 64 × 512 = 32,768 tokens, 7 % of one replica's 458,752: every
	// replica has room to keep every shared prompt, so round robin finds
	// one cached about as often as a prefix-aware router does. And the
	// shared part is small: a hit saves 0.035·512 ≈ 18 ms of prefill, on
	// average 0.25 × 18 ≈ 4.5 ms a request, against 20 + 0.035·1,012 ≈ 55
	// ms for the whole prompt.
	FleetLowReuse = PrefixReuse{Groups: 64, PrefixTokens: 512, Probability: 0.25, BlockTokens: 16}

	// FleetHighReuse: every request begins with one of 256 shared
	// 4,096-token prefixes (system prompts or documents) of Zipf popularity
	// s = 0.8, inside the 0.64–0.83 that Breslau et al. measured for web
	// requests (INFOCOM 1999); the most popular prefix takes 9.3 % of the
	// requests, less than a replica's quarter.
	//
	// Its working set is where routing matters: larger than one replica's
	// KV cache and smaller than the fleet's. All of it is 256 × 4,096 =
	// 1,048,576 tokens, 2.29 times one replica's 458,752 and 57 % of the
	// fleet's 1,835,008. Counting only what the popular prefixes need
	// gives the same answer: the 178 most popular carry 90 % of the
	// requests and take 178 × 4,096 = 729,088 tokens (1.59 replicas), the
	// 120 that carry 80 % take 491,520 (> 458,752). So a replica that sees
	// every prefix (round robin) cannot keep what its traffic reuses,
	// while a router that splits the prefixes among the 4 replicas leaves
	// each 64 × 4,096 = 262,144 tokens to keep (57 % of its pool) and
	// 196,608 for its running requests' own tokens (32 × 700 = 22,400 at
	// batch 32 with 200-token answers).
	//
	// Either way a request is servable within the 600 ms TTFT SLO: with
	// its prefix cached it prefills its 500-token suffix in 20 + 0.035·500
	// = 37.5 ms; uncached, the 4,596-token prompt in 20 + 0.035·4,596 ≈
	// 181 ms. The 143 ms between them, per request, is what a router can
	// win. On a busy replica (vLLM's 2,048-token step budget, 45 ms decode
	// steps mixed in) the uncached prompt takes three steps, about
	// 3 × (45 + 20) + 0.035·4,596 ≈ 356 ms before queueing, against one
	// step of 45 + 20 + 17.5 = 82.5 ms cached: still within the SLO, with
	// less margin.
	FleetHighReuse = PrefixReuse{Groups: 256, PrefixTokens: 4096, Probability: 1, BlockTokens: 16, Zipf: 0.8}
)
