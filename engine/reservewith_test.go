package engine

import (
	"testing"
	"time"
)

// TestReserveWithDeclinesBesideALanding drives a KV consumer and its
// step-by-step twin (walkRuns, cut at every Add) into the state
// reserveWith guards against: a run of decodes in flight, a Remote
// request handed over inside a step (ReserveLater: its reservation
// pending at the next step's start), then, inside the same step, the
// KV of a reserved request landing and a second Remote request handed
// over. The driver cuts once at that instant, after its last event,
// as the Add's ReserveLater says (a landing a driver lets ReserveLater
// weigh; sim cuts at every landing, so its reservation is always
// dropped first). Step by step the next step's waiting loop admits the
// landed request first, which changes the step: ReserveLater must
// decline, and the twins' plans, outcomes and readings must then agree
// to the end. With reserveWith's test of a landed request left out, it
// holds, and the fast engine reserves at that step what the twin's plan
// there admits and reserves.
func TestReserveWithDeclinesBesideALanding(t *testing.T) {
	k := newKVTwins(t, Config{MaxSeqs: 8, MaxBatchedTokens: 256, KVBlocks: 200, BlockSize: 16, RemoteKV: true}, false)
	e, slow, w := k.a, k.b, k.twins
	add, land, plan, complete := k.add, k.land, k.plan, k.complete
	// Requests 0 and 1 reserved with 2, landed and admitted without it,
	// then decoding in a run while 2's KV is on its way.
	k.reserveAll(60, 60, 60)
	land(0, 1)
	k.until = k.now + 1
	p := plan()
	k.until = time.Hour
	if len(p.Started) != 2 {
		t.Fatalf("%d admitted, want 2", len(p.Started))
	}
	complete(p.End)
	p = plan()
	if p.Steps < 4 || len(p.Started)+len(p.Reserved) > 0 {
		t.Fatalf("the run after the admission: %+v, want a run of 4 steps or more of decodes alone", p)
	}
	// Inside its second step: request 3 handed over, its reservation
	// pending at the third step's start; the twin cuts.
	k.now = p.Start + p.StepTime*3/2
	next := p.Start + 2*p.StepTime
	add(3, 60)
	at, ok := e.Runner().ReserveLater(k.now)
	if !ok || at != next {
		t.Fatalf("ReserveLater of request 3 at %v: %v, %v; want the next step's start %v", k.now, at, ok, next)
	}
	slow.Runner().SyncTo(k.now)
	if _, _, err := slow.Runner().Truncate(k.now); err != nil {
		t.Fatal(err)
	}
	// Request 2's KV lands, and request 4 is handed over, at the same
	// instant.
	e.Runner().SyncTo(k.now)
	land(2)
	add(4, 60)
	if _, ok := e.Runner().ReserveLater(k.now); ok {
		t.Errorf("ReserveLater of request 4 beside a pending reservation held with request 2 landed and waiting")
		// The driver trusts it: the step at next reserves.
		res, _, ok := e.Runner().ReserveInRun(next)
		complete2 := func() *Plan {
			if _, err := slow.Complete(next); err != nil {
				t.Fatal(err)
			}
			p2, err := slow.Runner().ScheduleUntil(next, k.until)
			if err != nil {
				t.Fatal(err)
			}
			return p2
		}
		p2 := complete2()
		w.same("the step at the reservation's start: reserved, admitted", []any{ok, res, []int32(nil)}, []any{true, p2.Reserved, p2.Started})
		return
	}
	if _, _, err := e.Runner().Truncate(k.now); err != nil {
		t.Fatal(err)
	}
	w.same("state after the cut", state(e, k.now), state(slow, k.now))
	// The twins, cut alike, go on step by step to the end, each plan's
	// reservations landing at its end.
	steps := 0
	for busy := true; !e.Idle(); steps++ {
		if steps > 1000 {
			t.Fatal("the requests did not finish")
		}
		if busy {
			complete(next)
		} else if len(k.reserved) == 0 {
			t.Fatal("nothing planned, nothing on its way, with requests left")
		} else {
			k.now++ // nothing in flight: the KV on its way lands
		}
		land(k.reserved...)
		k.reserved = k.reserved[:0]
		if p = plan(); p != nil {
			next = p.End
		}
		busy = p != nil
	}
	if steps < 5 {
		t.Fatalf("the twins finished in %d moves after the cut", steps)
	}
}
