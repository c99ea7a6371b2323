package engine

import (
	"testing"
	"time"
)

// TestContinueLandedStopsAtTheSeqCap drives a KV consumer of three
// sequences and its twin (walkRuns) to a step end where one landed
// request joins two running ones, filling the running list, while a
// Remote request added at the step end waits: continueLanded admits the
// landed one and, as the walk's waiting loop stops at MaxSeqs, does not
// reserve the one waiting. The twins' plans, readings and outcomes must
// agree throughout, and that step end must be a continued plan.
func TestContinueLandedStopsAtTheSeqCap(t *testing.T) {
	k := newKVTwins(t, Config{MaxSeqs: 3, MaxBatchedTokens: 256, KVBlocks: 200, BlockSize: 16, RemoteKV: true}, true)
	e, w := k.a, k.twins
	add, land, plan := k.add, k.land, k.plan
	complete := func(p *Plan) { k.complete(p.End) }
	// Three reserved, landed and admitted together, and their run
	// continued: a step of three decodes is priced (flatTo).
	k.reserveAll(60, 60, 4)
	land(0, 1, 2)
	k.until = k.now + 1 // one step: the next, continued, prices three decodes (flatTo)
	p := plan()
	k.until = time.Hour
	if len(p.Started) != 3 || p.Steps != 1 {
		t.Fatalf("%d admitted in %d steps, want 3 in 1", len(p.Started), p.Steps)
	}
	complete(p)
	if p = w.continued(k.now, k.until); p == nil || p.Cohort != 3 {
		t.Fatalf("the step end after the admission continued %+v: want the cohort of three's run", p)
	}
	// Request 2 finishes; request 3, added inside the run, is reserved
	// at the plan after the finish, and lands at that step's end, where
	// request 4 is added.
	add(3, 60)
	complete(p)
	if q := w.continued(k.now, k.until); q != nil {
		p = q
	} else {
		p = plan()
	}
	for len(p.Reserved) == 0 {
		complete(p)
		if q := w.continued(k.now, k.until); q != nil {
			p = q
		} else {
			p = plan()
		}
	}
	if e.Running() != 2 || p.Reserved[0].Ref != 3 {
		t.Fatalf("%d running, reserved %v: want 2 running and request 3 reserved", e.Running(), p.Reserved)
	}
	complete(p)
	land(3)
	add(4, 60)
	contLandedPlans = 0
	q := w.continued(k.now, k.until)
	if q == nil || contLandedPlans != 1 || len(q.Started) != 1 || len(q.Reserved) != 0 || e.Running() != 3 || e.Waiting() != 1 {
		t.Fatalf("the step end with request 3 landed and 4 waiting planned %+v, %d running: want a continued plan admitting 3, reserving nothing, 3 running", q, e.Running())
	}
	complete(q)
}
