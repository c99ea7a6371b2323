package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestAreaByRequestIsEachEvent holds the integral of the requests in the
// system over the window taken by request (window.areaIn: sysIn, sysOut,
// systemArea) to the same run integrating it event by event
// (twins.areaEachEvent), byte for byte, every record and the summary
// (its mean in the system, a single replica's MeanHeld), and the exact
// integral itself, 128 bits, and the summaries Summarize recomputes from
// the records both ways (but an autoscaler's): over the random scenarios (windows with and
// without a horizon, drains, a detected warm-up, overloads with
// MaxBacklog, a concurrency cap, a gateway, timeouts, errors, fleets,
// prefill pools, autoscalers) and the regimes' small workloads.
func TestAreaByRequestIsEachEvent(t *testing.T) {
	t.Parallel()
	runs, held, open := 0, 0, 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, br := runTwinsAlike(t, name, cfg, src, twins{}, twins{areaEachEvent: true})
		require.False(t, br.openStarted, name)
		require.Equal(t, br.area, ar.systemArea(), name)
		require.Equal(t, br.area, br.systemArea(), name)
		runs++
		if ar.systemArea() != (wide{}) {
			held++
		}
		if ar.openStarted {
			open++
		}
		if ar.scale == nil { // Summarize takes the fleet as configured
			summarizedAlike(t, name, cfg, a.recs, twins{areaEachEvent: true})
		}
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d runs, %d of them holding requests in the window, %d in an open window", runs, held, open)
	require.Greater(t, held, runs/2)
	require.Greater(t, open, runs/4)
}

// TestHeldByRequestIsEachEvent holds each replica's integral of the
// requests it holds over the window taken by request (heldIn,
// heldAreaTo) to the same run integrating it at each change
// (twins.heldEachEvent), byte for byte, every record and the summary
// (its Replicas' MeanHeld and Imbalance.Held), each replica's exact
// integral, 128 bits, and the summaries Summarize recomputes from the
// records (a single replica's taking the system's integral, oneHeld)
// and with the twins on (but an autoscaler's): over the random scenarios
// and the regimes' small workloads. A single replica integrates its
// own here (twins.ownHeldArea on both sides), so that every run
// reaches heldIn.
func TestHeldByRequestIsEachEvent(t *testing.T) {
	t.Parallel()
	runs, fleets, held := 0, 0, 0
	own, each := twins{ownHeldArea: true}, twins{ownHeldArea: true, heldEachEvent: true}
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, br := runTwinsAlike(t, name, cfg, src, own, each)
		require.Len(t, ar.reps, len(br.reps), name)
		runs++
		if ar.fleet {
			fleets++
		}
		for i := range ar.reps {
			fast := ar.heldAreaTo(&ar.reps[i], ar.areaAt)
			require.Equal(t, br.heldAreaTo(&br.reps[i], br.areaAt), fast, "%s: replica %d", name, i)
			if fast != (wide{}) {
				held++
			}
		}
		if ar.scale == nil { // Summarize takes the fleet as configured
			summarizedAlike(t, name, cfg, a.recs, each)
		}
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d runs, %d of fleets, %d replicas holding requests in the window", runs, fleets, held)
	require.Greater(t, fleets, runs/4)
	require.Greater(t, held, runs)
}

// TestHeldInIsIntegrateHeld holds a replica's integral by request
// (heldIn, heldAreaTo) to its twin integrating at each change
// (integrateHeld, twins.heldEachEvent) where the clock falls behind the
// replica's latest instant: heldAreaTo moves heldAt to the instant it is
// read to (the summary's, the window's end, ahead of the clock), and a
// change after that comes at a clock behind it. heldIn must count from
// the running maximum, not the clock, as integrateHeld does (it adds
// nothing for an interval that ends before heldAt). Whole runs read
// heldAreaTo once, at the summary, after every change, so they never
// reach this (TestHeldByRequestIsEachEvent): here random changes of one
// replica through holdApart on two runners, windows that open and
// close anywhere among the changes, the integral read up to instants
// behind, at and ahead of the clock, both ways compared at each read.
func TestHeldInIsIntegrateHeld(t *testing.T) {
	behind := 0
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 58))
		fast, slow := &runner{}, &runner{tw: twins{heldEachEvent: true}}
		opens := time.Duration(rng.IntN(1000))
		closes := opens + time.Duration(rng.IntN(2000))
		for _, r := range []*runner{fast, slow} {
			r.opens, r.closes = opens, closes
		}
		var a, b replica
		now, read := time.Duration(0), time.Duration(0)
		for range 200 {
			switch rng.IntN(8) {
			case 0: // the integral read up to an instant about the clock
				at := now + time.Duration(rng.IntN(600)) - 100
				read = max(read, at)
				require.Equal(t, slow.heldAreaTo(&b, at), fast.heldAreaTo(&a, at), "seed %d: read to %v at %v", seed, at, now)
			default:
				now += time.Duration(rng.IntN(3) * rng.IntN(50))
				d := 1
				if a.held > 0 && rng.IntN(2) == 0 {
					d = -1
				}
				if now < read {
					behind++
				}
				fast.now, slow.now = now, now
				fast.holdApart(&a, d)
				slow.holdApart(&b, d)
			}
		}
		at := max(now, closes)
		require.Equal(t, slow.heldAreaTo(&b, at), fast.heldAreaTo(&a, at), "seed %d: at the end", seed)
	}
	t.Logf("%d changes at a clock behind an instant the integral was read to", behind)
	require.Positive(t, behind)
}
