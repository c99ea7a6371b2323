package sim

import "github.com/servesim/servesim/workload"

// Random sends each arrival to a replica drawn uniformly from the run's
// routing stream (SGLang's router with --policy random). A Poisson stream
// of rate λ so routed to N replicas is N independent Poisson streams of
// rate λ/N (Poisson thinning): the fleet's knee is N times one replica's.
type Random struct{}

// Route draws a replica.
func (Random) Route(_ *workload.Request, v *View) int { return v.Rand().IntN(v.Replicas()) }
