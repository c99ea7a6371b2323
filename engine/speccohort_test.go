package engine

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/accept"
)

// specCohortSteps counts the plans whose speculative cohort had members
// (FuzzSpecCohort, TestSpecCohortOnRandomScenarios).
var specCohortSteps int

// specScenario turns bytes into a speculative scenario (K, α or the
// hash acceptor, token budget, chunk cap, block size, a small pool for
// KV pressure, adds, aborts in flight or not, steps, checks and
// Scheduled read in flight) and drives two engines alike (their
// acceptors too: the same draws, or the same calls): one that keeps
// a speculative cohort (OmitStreaks, Frozen) and its twin, which asks
// for no OmitStreaks and lists every decode. Every plan (its verified
// positions as the walk lists them: planShape), outcome, reading and
// Scheduled list must be the same, and both engines' invariants hold
// (strict mode, Check).
func specScenario(t *testing.T, data []byte) {
	if len(data) < 5 {
		return
	}
	cfg := Config{
		MaxSeqs:               1 + int(data[0]%24),
		MaxBatchedTokens:      32 + int(data[1])*4,
		ChunkCap:              int(data[2]%4) * 16,
		KVBlocks:              8 + int(data[3])*2,
		BlockSize:             []int{4, 16, 8, 12}[data[4]%4],
		SpeculativeTokens:     1 + int(data[4]/4%7),
		DisableChunkedPrefill: data[1]%7 == 0,
	}
	if cfg.DisableChunkedPrefill {
		cfg.ChunkCap = 0
	}
	model := costmodel.Frozen{}
	a, err := New(cfg, model)
	if err != nil {
		return
	}
	b, _ := New(cfg, model)
	var streams [2][]accept.PCG
	var asked [2]countAcceptor
	if data[2]/4%3 != 0 {
		alpha := float64(data[3]%11) / 10
		a.SetAcceptor(accept.NewIID(&streams[0], alpha, cfg.SpeculativeTokens))
		b.SetAcceptor(accept.NewIID(&streams[1], alpha, cfg.SpeculativeTokens))
	} else {
		a.SetAcceptor(&asked[0])
		b.SetAcceptor(&asked[1])
	}
	a.Runner().SetStrict(true)
	b.Runner().SetStrict(true)
	a.Runner().OmitStreaks(true) // the cohort: speculative decoding keeps listing every emit
	if a.sc == nil || !a.sc.on || b.sc != nil {
		t.Fatalf("the speculative cohort is not kept by the one engine alone (FastPaths: %v)", a.FastPaths())
	}
	w := twins{t, a, b}
	var now time.Duration
	var next int32
	var inFlight *Plan
	var buf [2][]Scheduled
	for i, op := range data[5:] {
		arg := int(op >> 2)
		switch op % 4 {
		case 0: // a request arrives
			in, out := 1+arg*7%90, 1+arg*13%70
			for j := range streams {
				streams[j] = append(streams[j], accept.NewPCG(uint64(next), uint64(i)))
			}
			r := Request{Ref: next, Arrival: now, Input: in, Output: out}
			w.same("Add", a.Add(now, r), b.Add(now, r))
			next++
		case 1: // an abort, in flight or not
			if next > 0 {
				ref := next - 1 - int32(arg%4)
				if ref >= 0 {
					w.same("Abort", a.Abort(now, ref), b.Abort(now, ref))
				}
			}
		default: // a step: plan, or complete the one in flight
			if inFlight == nil {
				p, err := a.Schedule(now)
				p2, err2 := b.Schedule(now)
				w.same("Schedule error", err, err2)
				w.same("Schedule", planShape(a, p), planShape(b, p2))
				if a.specMembers() > 0 {
					specCohortSteps++
				}
				inFlight = p
				if p == nil {
					now += time.Millisecond
				}
			} else {
				now = inFlight.End
				o, err := a.Complete(now)
				o2, err2 := b.Complete(now)
				w.same("Complete error", err, err2)
				w.same("Complete", o, o2)
				inFlight = nil
			}
		}
		if inFlight != nil && op%3 == 0 {
			var ok, ok2 bool
			buf[0], ok = a.Scheduled(buf[0][:0])
			buf[1], ok2 = b.Scheduled(buf[1][:0])
			w.same("Scheduled", ok, ok2)
			if !reflect.DeepEqual(buf[0], buf[1]) && (len(buf[0]) > 0 || len(buf[1]) > 0) {
				t.Fatalf("Scheduled: cohort %+v, listed %+v", buf[0], buf[1])
			}
		}
		w.same("readings", readings(a, now), readings(b, now))
		// The acceptor asked alike: each stream drawn as often (a
		// member with one token left draws nothing, as the walk's
		// decode), the other acceptor called as often.
		w.same("acceptance streams", streams[0], streams[1])
		w.same("acceptor calls", asked[0].calls, asked[1].calls)
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(); err != nil {
			t.Fatal(err)
		}
	}
	// Whatever happened, both drain alike.
	for steps := 0; !a.Idle() && steps < 100_000; steps++ {
		if inFlight == nil {
			p, _ := a.Schedule(now)
			p2, _ := b.Schedule(now)
			w.same("Schedule", planShape(a, p), planShape(b, p2))
			if p == nil {
				now += time.Millisecond
				continue
			}
			inFlight = p
		}
		now = inFlight.End
		o, _ := a.Complete(now)
		o2, _ := b.Complete(now)
		w.same("Complete", o, o2)
		inFlight = nil
	}
	w.same("idle", a.Idle(), b.Idle())
}

// countAcceptor is hashAcceptor counting its calls (specScenario).
type countAcceptor struct{ calls int }

func (c *countAcceptor) Accept(ref int32, drafted int) int {
	c.calls++
	return hashAcceptor{}.Accept(ref, drafted)
}

// FuzzSpecCohort holds the speculative cohort (speccohort.go) to the
// listed plan on random speculative scenarios (specScenario).
//
//	go test ./engine -run '^$' -fuzz FuzzSpecCohort -fuzztime 30s -parallel 1
func FuzzSpecCohort(f *testing.F) {
	f.Add([]byte{8, 40, 3, 60, 17, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2, 2, 2, 1, 2, 2, 2, 2})
	f.Add([]byte{20, 200, 1, 5, 9, 0, 4, 8, 12, 2, 2, 3, 2, 3, 2, 3, 2, 3, 5, 2, 3, 2, 3, 2})
	f.Fuzz(specScenario)
}

// TestSpecCohortOnRandomScenarios runs specScenario on 1,000 seeded
// random scenarios, and asks that the cohort planned steps in them.
func TestSpecCohortOnRandomScenarios(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 41))
	specCohortSteps = 0
	for range 1000 {
		data := make([]byte, 5+rng.IntN(120))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		// Steps more often than adds, so that decodes run.
		for i := 5; i < len(data); i++ {
			if rng.IntN(3) > 0 {
				data[i] = data[i]&^3 | 2
			}
		}
		specScenario(t, data)
	}
	if specCohortSteps < 1000 {
		t.Errorf("%d plans with a speculative cohort in 1000 scenarios: the scenarios no longer reach it", specCohortSteps)
	}
	t.Logf("%d plans with a speculative cohort", specCohortSteps)
}
