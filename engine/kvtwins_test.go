package engine

import (
	"testing"
	"time"
)

// kvTwins is a KV consumer (Config.RemoteKV) and its slow twin
// (walkRuns) driven by hand, instant by instant, every answer compared:
// TestContinueLandedStopsAtTheSeqCap's and
// TestReserveWithDeclinesBesideALanding's driver.
type kvTwins struct {
	twins
	now, until time.Duration
	reserved   []int32 // the Remote requests the plans reserved, since reset
}

// newKVTwins makes the twins of configuration cfg, planning until an
// hour; strict holds every call to the batched contract's rules
// (Runner.SetStrict), with decode streaks left out.
func newKVTwins(t *testing.T, cfg Config, strict bool) *kvTwins {
	var engines [2]*Engine
	for i := range engines {
		e, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strict {
			e.Runner().OmitStreaks(true)
			e.Runner().SetStrict(true)
		}
		engines[i] = e
	}
	walkRuns(engines[1])
	return &kvTwins{twins: twins{t, engines[0], engines[1]}, until: time.Hour}
}

// add hands both a Remote request of 40 tokens and output to emit.
func (k *kvTwins) add(ref int32, output int) {
	r := Request{Ref: ref, Input: 40, Output: output, Remote: true}
	k.same("Add", k.a.Add(k.now, r), k.b.Add(k.now, r))
}

// land lands the requests' KV in both.
func (k *kvTwins) land(refs ...int32) {
	for _, ref := range refs {
		k.same("Land", k.a.Land(k.now, ref), k.b.Land(k.now, ref))
	}
}

// plan plans both with ScheduleUntil, the plans alike.
func (k *kvTwins) plan() *Plan {
	p, err := k.a.Runner().ScheduleUntil(k.now, k.until)
	if err != nil {
		k.t.Fatal(err)
	}
	p2, _ := k.b.Runner().ScheduleUntil(k.now, k.until)
	k.same("ScheduleUntil", planShape(k.a, p), planShape(k.b, p2))
	if p != nil {
		for _, r := range p.Reserved {
			k.reserved = append(k.reserved, r.Ref)
		}
	}
	return p
}

// complete completes both's moves at end, now then, the outcomes and
// states alike and each engine checked.
func (k *kvTwins) complete(end time.Duration) {
	o, err := k.a.Complete(end)
	if err != nil {
		k.t.Fatal(err)
	}
	o2, _ := k.b.Complete(end)
	k.same("Complete", o, o2)
	k.now = end
	for _, x := range []*Engine{k.a, k.b} {
		if err := x.Check(); err != nil {
			k.t.Fatal(err)
		}
	}
	k.same("state", state(k.a, k.now), state(k.b, k.now))
}

// reserveAll hands both Remote requests 0, 1, … of these outputs, plans
// a step that must reserve them all, and completes it; the reserved
// list is then empty.
func (k *kvTwins) reserveAll(outputs ...int) {
	for i, out := range outputs {
		k.add(int32(i), out)
	}
	p := k.plan()
	if p == nil || len(p.Reserved) != len(outputs) {
		k.t.Fatalf("the plan %+v reserved not all %d", p, len(outputs))
	}
	k.reserved = k.reserved[:0]
	k.complete(p.End)
}
