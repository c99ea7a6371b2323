package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/internal/specrun"
)

// FuzzSpecRunsAreStepsEngine holds an engine that plans speculative
// runs (specrun.Allow) to its twin driven a step a move, on random
// speculative engines (K, α, budgets, chunk caps, sequence caps, block
// sizes, small pools), its runs collected at their end, collected and
// cut at random instants inside them (CompleteUntil, Truncate), at
// step ends exactly (a Truncate that keeps none of the steps left), and
// followed by an abort in the step left: each request's tokens, each
// outcome's block-steps summed, the readings (free and cached blocks,
// Outstanding, waiting and running), and every acceptance stream, at
// every instant both reach, and both engines' invariants (strict mode,
// Check).
func FuzzSpecRunsAreStepsEngine(f *testing.F) {
	for seed := range uint64(16) {
		f.Add(randomSpecRunBytes(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		specRunsAreSteps(t, data)
	})
}

// TestSpecRunsAreStepsEngine is FuzzSpecRunsAreStepsEngine over 300
// seeded engines; it requires runs, runs cut inside, and cuts at a
// step's end among them.
func TestSpecRunsAreStepsEngine(t *testing.T) {
	var n specRunCounts
	for seed := range uint64(300) {
		c := specRunsAreSteps(t, randomSpecRunBytes(100+seed))
		n.runs += c.runs
		n.cuts += c.cuts
		n.atEnd += c.atEnd
		n.aborts += c.aborts
	}
	t.Logf("%+v", n)
	if n.runs < 300 || n.cuts < 30 || n.atEnd < 10 || n.aborts < 10 {
		t.Fatalf("too few speculative runs, cuts, cuts at a step's end or aborts: %+v", n)
	}
}

func randomSpecRunBytes(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5be45))
	data := make([]byte, 8+120)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return data
}

// specRunCounts are what specRunsAreSteps saw.
type specRunCounts struct{ runs, cuts, atEnd, aborts int }

func specRunsAreSteps(t *testing.T, data []byte) (c specRunCounts) {
	t.Helper()
	if len(data) < 8 {
		return c
	}
	cfg := Config{
		MaxSeqs:           1 + int(data[0]%16),
		MaxBatchedTokens:  32 + int(data[1])*4,
		ChunkCap:          int(data[2]%4) * 16,
		KVBlocks:          16 + int(data[3])*3,
		BlockSize:         []int{4, 16, 8, 32}[data[4]%4],
		SpeculativeTokens: 1 + int(data[4]/4%6),
	}
	alpha := float64(data[5]%11) / 10
	model := costmodel.Frozen{}
	a, err := New(cfg, model)
	if err != nil {
		return c
	}
	b, _ := New(cfg, model)
	var streams [2][]accept.PCG
	a.SetAcceptor(accept.NewIID(&streams[0], alpha, cfg.SpeculativeTokens))
	b.SetAcceptor(accept.NewIID(&streams[1], alpha, cfg.SpeculativeTokens))
	a.Runner().SetStrict(true)
	b.Runner().SetStrict(true)
	a.Runner().OmitStreaks(true)
	b.Runner().OmitStreaks(true)
	specrun.Allow(a, true)

	tokens := [2]map[int32]int{{}, {}}
	var blockSteps [2]int
	add := func(i int, o *Outcome) {
		for _, em := range o.Emitted {
			tokens[i][em.Ref] += em.Tokens
		}
		blockSteps[i] += o.BlockSteps
	}
	// bTo completes b's steps, a move each, up to instant end, planning
	// each at the end of the last; its step in flight, if any, is left in
	// flight when it ends after end.
	var bPlan *Plan
	var bNow time.Duration
	bTo := func(end time.Duration) {
		for {
			if bPlan == nil {
				if bNow >= end {
					return
				}
				p, err := b.Schedule(bNow)
				if err != nil {
					t.Fatal(err)
				}
				if p == nil {
					t.Fatalf("the twin plans nothing at %v, the engine ran to %v", bNow, end)
				}
				bPlan = p
			}
			if bPlan.End > end {
				return
			}
			bNow = bPlan.End
			o, err := b.Complete(bNow)
			if err != nil {
				t.Fatal(err)
			}
			add(1, o)
			bPlan = nil
		}
	}
	same := func(what string, now time.Duration) {
		t.Helper()
		if len(tokens[0]) != len(tokens[1]) || blockSteps[0] != blockSteps[1] {
			t.Fatalf("%s at %v: tokens %v and block-steps %d, the twin's %v and %d", what, now, tokens[0], blockSteps[0], tokens[1], blockSteps[1])
		}
		for ref, n := range tokens[0] {
			if tokens[1][ref] != n {
				t.Fatalf("%s at %v: request %d emitted %d tokens, the twin's %d", what, now, ref, n, tokens[1][ref])
			}
		}
		if ra, rb := readings(a, now), readings(b, now); ra != rb {
			t.Fatalf("%s at %v: readings %+v, the twin's %+v", what, now, ra, rb)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(); err != nil {
			t.Fatal(err)
		}
	}
	sameStreams := func(now time.Duration) {
		t.Helper()
		for ref := range streams[0] {
			if streams[0][ref] != streams[1][ref] {
				t.Fatalf("at %v: request %d's stream is not the twin's", now, ref)
			}
		}
	}

	var now time.Duration
	var next int32
	for i, op := range data[6:] {
		arg := int(op >> 2)
		switch op % 4 {
		case 0, 1: // a request arrives, or two
			for range 1 + int(op%2) {
				in, out := 1+arg*7%90, 1+arg*13%120
				for j := range streams {
					streams[j] = append(streams[j], accept.NewPCG(uint64(next), uint64(i)))
				}
				r := Request{Ref: next, Arrival: now, Input: in, Output: out}
				if err, err2 := a.Add(now, r), b.Add(now, r); (err == nil) != (err2 == nil) {
					t.Fatalf("Add: %v, the twin's %v", err, err2)
				}
				next++
			}
		default: // a move, to an instant arg steps of 10 ms on at most
			until := now + time.Duration(1+arg)*10*time.Millisecond
			p, err := a.Runner().ScheduleUntil(now, until)
			if err != nil {
				t.Fatal(err)
			}
			if p == nil {
				bTo(now)
				now += time.Millisecond
				bNow = now
				continue
			}
			if p.Steps > 1 {
				c.runs++
			}
			end := p.End
			switch {
			case p.Steps > 1 && op%3 == 0: // collected and cut inside a step
				c.cuts++
				cut := p.Start + time.Duration(1+arg%p.Steps)*p.StepTime - time.Duration(1+arg%7)*time.Microsecond
				o, err := a.Runner().CompleteUntil(cut)
				if err != nil {
					t.Fatal(err)
				}
				add(0, o)
				bTo(o.End)
				if bPlan == nil { // the step in progress at cut, planned: its blocks taken, as the run's
					if bPlan, err = b.Schedule(bNow); err != nil || bPlan == nil {
						t.Fatalf("the twin plans nothing at %v (%v)", bNow, err)
					}
				}
				same("CompleteUntil", o.End)
				if _, end, err = a.Runner().Truncate(cut); err != nil {
					t.Fatal(err)
				}
				if arg%3 == 0 && next > 0 { // an abort in the step left
					c.aborts++
					bTo(cut)
					ref := next - 1 - int32(arg%3)
					if ref >= 0 {
						e1, e2 := a.Abort(cut, ref), b.Abort(cut, ref)
						if (e1 == nil) != (e2 == nil) {
							t.Fatalf("Abort: %v, the twin's %v", e1, e2)
						}
					}
				}
			case p.Steps > 2 && op%3 == 1: // cut at a step's end: the steps left dropped
				c.atEnd++
				cut := p.Start + time.Duration(1+arg%(p.Steps-1))*p.StepTime
				o, err := a.Runner().CompleteUntil(cut)
				if err != nil {
					t.Fatal(err)
				}
				add(0, o)
				inFlight, _, err := a.Runner().Truncate(cut)
				if err != nil {
					t.Fatal(err)
				}
				if inFlight {
					t.Fatalf("a speculative run cut at a step's end, %v, keeps a step in flight", cut)
				}
				now = cut
				bTo(now)
				same("Truncate at a step's end", now)
				sameStreams(now)
				continue
			}
			o, err := a.Complete(end)
			if err != nil {
				t.Fatal(err)
			}
			add(0, o)
			now = end
			bTo(now)
			same("Complete", now)
			sameStreams(now)
		}
	}
	return c
}
