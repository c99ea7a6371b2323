package sim

import "github.com/servesim/servesim/workload"

// PowerOfTwo draws two distinct replicas from the run's routing stream and
// sends the arrival to the one with less outstanding work, ties to the
// first drawn (Mitzenmacher's power of two choices; SGLang's router
// --policy power_of_two). It balances almost as well as LeastLoaded while
// reading two replicas, and herds less when signals are stale.
type PowerOfTwo struct{}

// Route picks the less loaded of two random replicas.
func (PowerOfTwo) Route(_ *workload.Request, v *View) int {
	a, b := twoOf(v)
	if a != b && v.Outstanding(b) < v.Outstanding(a) {
		return b
	}
	return a
}

// twoOf draws PowerOfTwo's two distinct replicas from the run's routing
// stream, in the order drawn; a fleet of one is the one twice (no draw).
func twoOf(v *View) (a, b int) {
	n := v.Replicas()
	if n == 1 {
		return 0, 0
	}
	a = v.Rand().IntN(n)
	b = v.Rand().IntN(n - 1)
	if b >= a {
		b++
	}
	return a, b
}
