package scenario

import (
	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// Default returns a registry of every built-in kind:
//
//	costmodel.Model   frozen, linear, roofline, table, scaled, drafting
//	engine.Policy     fcfs, priority, shortest_prompt, earliest_deadline
//	sim.Router        round_robin, random, least_loaded, power_of_two,
//	                  prefix_affinity, consistent_hash
//	sim.CacheView     exact, approximate, events
//	sim.Decider       always_remote, never_remote, prefix_threshold
//	workload.Length   constant, uniform, empirical, normal, lognormal, zipf
//	workload.Joint    independent, resample, copula
//	analysis.Workload      poisson, synthetic, class_mix, clients, trace
//
// Each call builds a new registry, so a user's own kinds never leak into
// another's.
func Default() *Registry {
	r := New()
	MustRegister[costmodel.Model](r, "frozen", costmodel.Frozen{})
	MustRegister[costmodel.Model](r, "linear", costmodel.Linear{})
	MustRegister[costmodel.Model](r, "roofline", costmodel.Roofline{})
	MustRegister[costmodel.Model](r, "table", &costmodel.TableModel{})
	MustRegister[costmodel.Model](r, "scaled", costmodel.Scaled{})
	MustRegister[costmodel.Model](r, "drafting", costmodel.Drafting{})

	MustRegister[engine.Policy](r, "fcfs", engine.FCFS{})
	MustRegister[engine.Policy](r, "priority", engine.Priority{})
	MustRegister[engine.Policy](r, "shortest_prompt", engine.ShortestPrompt{})
	MustRegister[engine.Policy](r, "earliest_deadline", engine.EarliestDeadline{})

	MustRegister[sim.Router](r, "round_robin", sim.RoundRobin{})
	MustRegister[sim.Router](r, "random", sim.Random{})
	MustRegister[sim.Router](r, "least_loaded", sim.LeastLoaded{})
	MustRegister[sim.Router](r, "power_of_two", sim.PowerOfTwo{})
	MustRegister[sim.Router](r, "prefix_affinity", sim.PrefixAffinity{})
	MustRegister[sim.Router](r, "consistent_hash", sim.ConsistentHash{})

	MustRegister[sim.CacheView](r, "exact", sim.ExactView{})
	MustRegister[sim.CacheView](r, "approximate", sim.ApproxView{})
	MustRegister[sim.CacheView](r, "events", sim.EventsView{})
	MustRegister[sim.CacheView](r, "tiered", sim.TieredView{})

	MustRegister[sim.Decider](r, "always_remote", sim.AlwaysRemote{})
	MustRegister[sim.Decider](r, "never_remote", sim.NeverRemote{})
	MustRegister[sim.Decider](r, "prefix_threshold", sim.PrefixThreshold{})

	MustRegister[workload.Length](r, "constant", workload.Constant{})
	MustRegister[workload.Length](r, "uniform", workload.Uniform{})
	MustRegister[workload.Length](r, "empirical", workload.Empirical{})
	MustRegister[workload.Length](r, "normal", workload.Normal{})
	MustRegister[workload.Length](r, "lognormal", workload.LogNormal{})
	MustRegister[workload.Length](r, "zipf", workload.Zipf{})

	MustRegister[workload.Joint](r, "independent", workload.Independent{})
	MustRegister[workload.Joint](r, "resample", workload.Resample{})
	MustRegister[workload.Joint](r, "copula", workload.Copula{})

	MustRegister[analysis.Workload](r, "poisson", analysis.PoissonWorkload{})
	MustRegister[analysis.Workload](r, "synthetic", analysis.SyntheticWorkload{})
	MustRegister[analysis.Workload](r, "class_mix", analysis.ClassMixWorkload{})
	MustRegister[analysis.Workload](r, "clients", analysis.ClientsWorkload{})
	MustRegister[analysis.Workload](r, "trace", analysis.TraceWorkload{})
	return r
}
