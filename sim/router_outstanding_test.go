package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// loadLeastLoaded and loadPowerOfTwo are LeastLoaded and PowerOfTwo as
// they read the load before View.Outstanding: the whole Load, its
// replica's run synced to the instant first (SyncTo).
type (
	loadLeastLoaded struct{}
	loadPowerOfTwo  struct{}
)

func (loadLeastLoaded) Route(_ *workload.Request, v *View) int {
	best, least := 0, v.Load(0).Outstanding
	for i := 1; i < v.Replicas(); i++ {
		if o := v.Load(i).Outstanding; o < least {
			best, least = i, o
		}
	}
	return best
}

func (loadPowerOfTwo) Route(_ *workload.Request, v *View) int {
	a, b := twoOf(v)
	if a != b && v.Load(b).Outstanding < v.Load(a).Outstanding {
		return b
	}
	return a
}

// TestOutstandingIsTheLoads holds LeastLoaded and PowerOfTwo, which read
// a replica's outstanding tokens alone (View.Outstanding, no SyncTo), to
// twins reading the whole Load, on the random scenarios whose fleet or
// prefill pool routes by them: both runs fast, the same bytes.
func TestOutstandingIsTheLoads(t *testing.T) {
	t.Parallel()
	twin := func(r Router) (Router, bool) {
		switch r.(type) {
		case LeastLoaded:
			return loadLeastLoaded{}, true
		case PowerOfTwo:
			return loadPowerOfTwo{}, true
		}
		return r, false
	}
	routed, pools := 0, 0
	for seed := range uint64(1_500) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		slow := cfg
		var fleet, pool bool
		slow.Fleet.Router, fleet = twin(cfg.Fleet.Router)
		slow.Fleet.Prefill.Router, pool = twin(cfg.Fleet.Prefill.Router)
		if !fleet && !pool {
			continue
		}
		if cfg.Fleet.SignalDelay > 0 {
			continue // the stale signals read the whole Load either way
		}
		routed++
		if pool {
			pools++
		}
		sameScenario(t, data, reqs, cfg, slow)
	}
	t.Logf("%d scenarios routed by outstanding tokens, %d of them in a prefill pool", routed, pools)
	require.Greater(t, routed, 100)
	require.Greater(t, pools, 10)
}

// sameScenario runs the scenario of data's requests under fast and under
// its twin slow, and requires the same bytes of both.
func sameScenario(t *testing.T, data []byte, reqs list, fast, slow Config) {
	t.Helper()
	got, err := runScenario(fast, reqs, recordsSteps(data))
	require.NoError(t, err)
	want, err := runScenario(slow, reqs, recordsSteps(data))
	require.NoError(t, err)
	sameBytes(t, want.text, got.text)
}

// askedLeastLoaded is LeastLoaded asked through the Router interface,
// with the request built: send takes LeastLoaded's choice itself
// (runner.leastFresh), and a type of its own does not match.
type askedLeastLoaded struct{ LeastLoaded }

// TestLeastFreshIsTheRouter holds send's own LeastLoaded choice
// (runner.leastFresh: fresh signals, no gateway, no request built; a
// prefill pool placed by placeLeast) to the routers asked through their
// interface, on the random scenarios whose fleet routes by LeastLoaded:
// both runs fast, the same bytes.
func TestLeastFreshIsTheRouter(t *testing.T) {
	t.Parallel()
	fresh, pools := 0, 0
	for seed := range uint64(1_500) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		if _, ok := cfg.Fleet.Router.(LeastLoaded); !ok {
			continue
		}
		slow := cfg
		askLeastLoaded(&slow)
		_, r, err := runScenarioRunner(cfg, reqs)
		require.NoError(t, err)
		if r.leastFresh {
			fresh++
			if r.pd != nil {
				pools++
			}
		}
		sameScenario(t, data, reqs, cfg, slow)
	}
	t.Logf("%d scenarios routed by send's own LeastLoaded choice, %d of them disaggregated", fresh, pools)
	require.Greater(t, fresh, 40)
	require.Greater(t, pools, 2)
	// And the regimes behind LeastLoaded: Disagg's two pools of several
	// replicas each (the random scenarios' prefill pools are small).
	for _, rg := range regimes {
		if rg.name == "Fleet8LeastLoaded" || rg.name == "Disagg" {
			_, fast, slow := runRegimeTwice(t, rg, askLeastLoaded)
			sameBytes(t, slow.text, fast.text)
		}
	}
}

// askLeastLoaded has cfg's routers that are LeastLoaded asked through
// the Router interface (askedLeastLoaded), the decode and the prefill
// pool's.
func askLeastLoaded(cfg *Config) {
	if _, ok := cfg.Fleet.Router.(LeastLoaded); ok {
		cfg.Fleet.Router = askedLeastLoaded{}
	}
	if _, ok := cfg.Fleet.Prefill.Router.(LeastLoaded); ok {
		cfg.Fleet.Prefill.Router = askedLeastLoaded{}
	}
}

// TestEnginesAreTheReplicas holds runner.engs, the engines
// leastOutstanding reads, to the replicas' own (reps[i].eng) at a run's
// end: fleets of the random scenarios, and the regimes, an autoscaled
// fleet whose replicas join during the run among them. Each arrival
// behind LeastLoaded reads them, so one out of step routes by another
// replica's load (or past the fleet's end).
func TestEnginesAreTheReplicas(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, r *runner) {
		require.Len(t, r.engs, len(r.reps))
		for i := range r.reps {
			require.Same(t, r.reps[i].eng, r.engs[i], "replica %d", i)
		}
	}
	fleets, grown := 0, 0
	for seed := range uint64(300) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		_, r, err := runScenarioRunner(cfg, reqs)
		require.NoError(t, err)
		check(t, r)
		if len(r.reps) > 1 {
			fleets++
		}
	}
	for _, rg := range regimes {
		cfg, src := rg.build(t, rg.small)
		_, r, err := runSourceScenario(cfg, src())
		require.NoError(t, err)
		check(t, r)
		if len(r.reps) > len(cfg.Fleet.Replicas) {
			grown++
		}
	}
	require.Greater(t, fleets, 30)
	require.Positive(t, grown, "a fleet grew during its run")
}
