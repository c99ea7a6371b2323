package engine

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/keyindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkedFCFS is an engine mid-step in each place Check looks: three
// requests sharing a two-block prefix decode in the cohort (outputs 50,
// 60 and 70), one prompt of 600 tokens is in prefill in the running list,
// three requests wait in the FCFS run (MaxSeqs 4 is reached), and the two
// cached blocks of a finished request wait in the free queue.
func checkedFCFS(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{MaxSeqs: 4, KVBlocks: 64}, nil)
	require.NoError(t, err)
	e.noRuns = true // the invariants of a pool kept by blocks
	e.Runner().OmitStreaks(true)
	for ref, output := range []int{50, 60, 70} {
		require.NoError(t, e.Add(0, Request{Ref: int32(ref), Input: 40, Output: output, Prefix: []uint64{1, 2}, PrefixBlockTokens: 16}))
	}
	require.NoError(t, e.Add(0, Request{Ref: 5, Input: 40, Output: 1, Prefix: []uint64{7, 8}, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	now := p.End
	require.NoError(t, e.Add(now, Request{Ref: 10, Input: 600, Output: 5}))
	for ref := int32(20); ref < 23; ref++ {
		require.NoError(t, e.Add(now, Request{Ref: ref, Input: 30, Output: 5}))
	}
	_, err = e.Runner().ScheduleUntil(now, now+10e9)
	require.NoError(t, err)
	require.Equal(t, 3, e.co.n, "members")
	require.Len(t, e.running, 1)
	require.Equal(t, 3, e.waiting.live, "requests in the FCFS run")
	require.Empty(t, e.waiting.items)
	require.Equal(t, 4, e.pool.cached)
	require.Equal(t, 2, e.pool.evict)
	require.True(t, e.inFlight)
	require.NoError(t, e.Check())
	return e
}

// checkedRemote is an engine taking Remote requests (KVBlocks 64) after
// one empty step that reserved three prompts of 40 tokens (3 blocks each,
// for 41 tokens) and stopped at a fourth of 1,000 (63 blocks, 55 free),
// two of the three landed since.
// checkedRuns is an engine whose prefix cache is kept by runs
// (runpool.go), with blocks cached, held and free.
func checkedRuns(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{MaxSeqs: 4, KVBlocks: 64}, nil)
	require.NoError(t, err)
	for ref, output := range []int{5, 60} {
		require.NoError(t, e.Add(0, Request{Ref: int32(ref), Input: 40, Output: output, Prefix: []uint64{1, 2}, PrefixBlockTokens: 16}))
	}
	stepsFrom0(t, e, 10)
	require.NotNil(t, e.pool.runs)
	require.Equal(t, 2, e.pool.cached)
	require.NoError(t, e.Check())
	return e
}

func checkedRemote(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{MaxSeqs: 4, KVBlocks: 64, RemoteKV: true}, nil)
	require.NoError(t, err)
	e.noRuns = true // the invariants of a pool kept by blocks
	for _, r := range []Request{{Ref: 1, Input: 40}, {Ref: 2, Input: 40}, {Ref: 4, Input: 40}, {Ref: 3, Input: 1000}} {
		r.Output, r.Remote = 5, true
		require.NoError(t, e.Add(0, r))
	}
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.Equal(t, []Reservation{{Ref: 1, Tokens: 40}, {Ref: 2, Tokens: 40}, {Ref: 4, Tokens: 40}}, p.Reserved)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Land(p.End, 2))
	require.NoError(t, e.Land(p.End, 1))
	require.Len(t, e.reserved, 1)
	require.Len(t, e.landed, 2)
	require.Equal(t, 1, e.waiting.len())
	require.Equal(t, 55, e.FreeBlocks())
	require.NoError(t, e.Check())
	return e
}

// checkedPriority is an engine under the Priority policy running one
// request, three waiting in its heap with their keys.
func checkedPriority(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{MaxSeqs: 1, Policy: Priority{}}, nil)
	require.NoError(t, err)
	e.noRuns = true // the invariants of a pool kept by blocks
	for ref, prio := range []int{4, 3, 2, 1} {
		require.NoError(t, e.Add(0, Request{Ref: int32(ref), Input: 30, Output: 5, Priority: prio}))
	}
	_, err = e.Schedule(0)
	require.NoError(t, err)
	require.Len(t, e.waiting.items, 3)
	require.NoError(t, e.Check())
	return e
}

// TestEachInvariantFires corrupts one invariant at a time and holds Check
// to exactly that invariant's violation: every message it returns is
// one its check writes, with the figures the corruption left.
func TestEachInvariantFires(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range []struct {
		invariant string
		state     func(t *testing.T) *Engine
		corrupt   func(t *testing.T, e *Engine) []string // the messages Check must return
	}{
		{"eachRequestInOnePlace", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.reqs.put(77, &seq{req: Request{Ref: 77}}) // asks for nothing: outstanding tokens hold
			e.waiting.run[e.waiting.head].s.req.Ref = 99
			return []string{"engine: 7 requests in queues but 8 in the lookup table", "engine: lookup table maps 20 to request 99", "engine: request 77 is in no queue"}
		}},
		{"cohortMembersMarkedRunning", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.members[0].phase = phaseWaiting
			return []string{"engine: request 0 in the decode cohort at index 0 is marked phase 0, member true"}
		}},
		{"runningMarkedRunning", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.running[0].phase = phaseWaiting
			return []string{"engine: request 10 in the running list at index 0 is not marked running"}
		}},
		{"waitingMarkedWaiting", checkedFCFS, func(t *testing.T, e *Engine) []string {
			q := &e.waiting
			q.run[q.head].s.heapIdx = 5
			return []string{fmt.Sprintf("engine: request 20 in the waiting queue's run at %d is marked phase 0, index 5", q.head)}
		}},
		{"waitingMarkedWaiting (heap)", checkedPriority, func(t *testing.T, e *Engine) []string {
			s := e.waiting.items[1].s
			s.heapIdx = 2
			return []string{fmt.Sprintf("engine: request %d in the waiting queue at 1 is marked phase 0, index 2", s.req.Ref)}
		}},
		{"waitingHoldNothing", checkedFCFS, func(t *testing.T, e *Engine) []string {
			s := e.waiting.run[e.waiting.head].s
			s.computed, s.anon = 16, 1 // one block for its tokens computed
			e.outstanding -= 16        // which it no longer asks for
			return []string{"engine: waiting request 20 holds 1 blocks and 16 computed tokens"}
		}},
		{"remoteInTheirLists", checkedRemote, func(t *testing.T, e *Engine) []string {
			e.landed[0].phase = phaseReserved
			return []string{"engine: request 1: landed but marked phase 2, stage 3, Remote true, tier false"}
		}},
		{"remoteHoldTheirSequence", checkedRemote, func(t *testing.T, e *Engine) []string {
			e.reserved[0].started = true
			return []string{"engine: request 4: Remote, stage 2, started true, emitted 1, scheduled 0"}
		}},
		{"remoteNotScheduledBeforeLanded", checkedRemote, func(t *testing.T, e *Engine) []string {
			e.sched, e.inFlight = append(e.sched, e.reserved[0]), true
			return []string{"engine: request 4: scheduled at the Remote stage 2, before its KV landed"}
		}},
		{"landedInPolicyOrder", checkedRemote, func(t *testing.T, e *Engine) []string {
			e.landed[0], e.landed[1] = e.landed[1], e.landed[0]
			return []string{"engine: landed request 2 waits after 1, which the policy admits later"}
		}},
		{"waitingHeapKeyed", checkedPriority, func(t *testing.T, e *Engine) []string {
			q := &e.waiting
			q.keys[2].Arrival = 7 // the Priority policy does not read it
			s := q.items[2].s
			k := s.queued()
			bad := k
			bad.Arrival = 7
			return []string{fmt.Sprintf("engine: request %d waits with the key %+v, not its own %+v", s.req.Ref, bad, k)}
		}},
		{"waitingHeapKeyed (count)", checkedPriority, func(t *testing.T, e *Engine) []string {
			e.waiting.keys = e.waiting.keys[:2]
			return []string{"engine: the waiting queue holds 3 requests and 2 keys"}
		}},
		{"waitingHeapOrdered", checkedPriority, func(t *testing.T, e *Engine) []string {
			q := &e.waiting
			q.items[0], q.items[1] = q.items[1], q.items[0]
			q.keys[0], q.keys[1] = q.keys[1], q.keys[0]
			q.items[0].s.heapIdx, q.items[1].s.heapIdx = 0, 1
			// The heap held refs 2, 0, 1 (priorities 2, 4, 3): ref 0, at
			// the root now, comes after both its children.
			return []string{"engine: request 2 in the waiting queue at 1 comes before its parent", "engine: request 1 in the waiting queue at 2 comes before its parent"}
		}},
		{"waitingRunOnlyUnderFCFS", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.waiting.fcfs = false
			return []string{fmt.Sprintf("engine: the waiting queue keeps a run of %d under a policy other than FCFS", len(e.waiting.run))}
		}},
		{"waitingRunHeadLive", checkedFCFS, func(t *testing.T, e *Engine) []string {
			q := &e.waiting
			q.run = append([]waitItem{{key: 0}}, q.run[q.head:]...)
			for i, it := range q.run[1:] {
				it.s.heapIdx = int32(runIdx(i + 1))
			}
			q.head = 0
			return []string{"engine: the waiting queue's run has a hole at its head 0"}
		}},
		{"waitingRunInKeyOrder", checkedFCFS, func(t *testing.T, e *Engine) []string {
			q := &e.waiting
			h := q.head
			want := q.run[h+1].key
			q.run[h].key = want
			return []string{fmt.Sprintf("engine: request 20 waits in the run with the key %d (Add order %d, preempted 0 times)", want, want-1),
				fmt.Sprintf("engine: the waiting queue's run is out of key order at %d (%d after %d)", h+1, want, want)}
		}},
		{"waitingRunCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.waiting.live++
			return []string{"engine: the waiting queue's run counts 4 requests and holds 3"}
		}},
		{"knownIsInputPlusEmitted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.running[0].known++
			return []string{"engine: request 10: known tokens 601 != input 600 + emitted 0"}
		}},
		{"computedWithinKnown", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.running[0].sched++ // 601 tokens take the 38 blocks 600 do
			return []string{"engine: request 10: computed 0 + scheduled 601 exceed known 600"}
		}},
		{"outputNotDone", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.running[0].req.Output = 0
			e.outstanding -= 5
			return []string{"engine: request 10: emitted 0 of 0 tokens but still held"}
		}},
		{"blocksCoverTokens", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.running[0].look = 700 // blocks kept beyond its 600 tokens
			return []string{"engine: request 10: holds 0 cached + 38 anonymous blocks for 700 tokens, want 44"}
		}},
		{"outstandingCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.outstanding++
			return []string{fmt.Sprintf("engine: outstanding tokens counted %d, requests hold %d", e.outstanding, e.outstanding-1)}
		}},
		{"lazyOnlyInFlight", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.lazy, e.inFlight, e.runAlloc = true, false, 1 // the first step's blocks, as a run takes them
			return []string{"engine: a run takes its blocks step by step (lazy), but no plan is in flight",
				"engine: decode cohort: 1 steps ahead with nothing in flight"} // the step's cohort, left in flight
		}},
		{"runningWithinMaxSeqs", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.cfg.MaxSeqs = 3
			return []string{"engine: running list 4 exceeds MaxSeqs 3"}
		}},
		{"cohortOnWhileMembers", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.on = false
			return []string{"engine: decode cohort: 3 members while the engine keeps no cohort"}
		}},
		{"membersIndexed", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.members[1].cidx = 5
			return []string{fmt.Sprintf("engine: decode cohort: member %d at 1 says it is at 5", e.co.members[1].req.Ref)}
		}},
		{"membersRanked", checkedFCFS, func(t *testing.T, e *Engine) []string {
			m := e.co.members
			m[2].rank = m[1].rank
			for i := range e.co.fin.run { // the finish queue's entries name the member by its rank
				if x := &e.co.fin.run[i]; x.s == m[2] {
					x.rank = m[1].rank
				}
			}
			return []string{fmt.Sprintf("engine: decode cohort: member %d ranks %d after %d", m[2].req.Ref, m[1].rank, m[1].rank)}
		}},
		{"membersCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.n++
			e.cfg.MaxSeqs++ // which counts the members too
			return []string{"engine: decode cohort: 3 members, counted 4"}
		}},
		{"membersFinishOnTime", checkedFCFS, func(t *testing.T, e *Engine) []string {
			fin := &e.co.fin
			require.Empty(t, fin.heap)
			last := &fin.run[len(fin.run)-1] // the last to finish: one tick later keeps the order
			last.tick++
			s := last.s
			s.finTick++
			return []string{fmt.Sprintf("engine: decode cohort: member %d finishes at tick %d, its tokens say %d", s.req.Ref, s.finTick, s.finTick-1)}
		}},
		{"cohortContextsSummed", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.csum++
			return []string{fmt.Sprintf("engine: decode cohort: contexts counted %d, members give %d", e.co.csum, e.co.csum-1)}
		}},
		{"cohortResiduesCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.q++
			return []string{fmt.Sprintf("engine: decode cohort: counts %v (Σq %d), members give %v (Σq %d)", e.co.count, e.co.q, e.co.count, e.co.q-1)}
		}},
		{"cohortSuffixSums", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.co.suf[0]++
			return []string{fmt.Sprintf("engine: decode cohort: suffix sum 0 is %d, the counts give %d", e.co.suf.n(0), e.co.suf.n(0)-1)}
		}},
		{"finishQueueHoldsMembers", checkedFCFS, func(t *testing.T, e *Engine) []string {
			last := &e.co.fin.run[len(e.co.fin.run)-1]
			last.tick++
			return []string{fmt.Sprintf("engine: decode cohort: finish queue has member %d at tick %d, it finishes at %d", last.s.req.Ref, last.tick, last.tick-1)}
		}},
		{"finishQueueOrdered", checkedFCFS, func(t *testing.T, e *Engine) []string {
			fin := &e.co.fin
			n := len(fin.run)
			fin.run[n-2], fin.run[n-1] = fin.run[n-1], fin.run[n-2]
			return []string{fmt.Sprintf("engine: decode cohort: finish queue's run out of order at %d", n-1-fin.head)}
		}},
		{"neverKeptIsEmpty", checkedSpec, func(t *testing.T, e *Engine) []string {
			e.co.fin.push(finEntry{tick: 3, s: &seq{}})
			return []string{"engine: decode cohort: never kept, yet 0 members and 1 due"}
		}},
		{"noStepsAheadIdle", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.inFlight = false
			e.co.ahead = 3 // within the members' last blocks: their views hold the same blocks
			return []string{"engine: decode cohort: 3 steps ahead with nothing in flight"}
		}},
		{"freeQueuesLinked", checkedFCFS, func(t *testing.T, e *Engine) []string {
			p := &e.pool
			q := &p.q[0]
			p.nodes[q.tail].next = q.head
			return []string{fmt.Sprintf("engine: KV blocks: free queue 0 has a cycle at node %d", q.head)}
		}},
		{"freeQueuesLinked (node)", checkedFCFS, func(t *testing.T, e *Engine) []string {
			p := &e.pool
			id := p.q[0].tail
			b := &p.nodes[id]
			b.prev = noNode
			return []string{fmt.Sprintf("engine: KV blocks: node %d in free queue 0: queued true, 0 references, prev -1 (want %d), queue 0, run %d", id, p.nodes[p.q[0].head].next, b.run)}
		}},
		{"freeQueuesSplit", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.pool.split = true // the cached blocks wait in the queue of the never-cached
			var want []string
			for id := e.pool.q[0].head; id != noNode; id = e.pool.nodes[id].next {
				if e.pool.nodes[id].run == 0 {
					want = append(want, fmt.Sprintf("engine: KV blocks: cached block %d in the never-cached queue", id))
				}
			}
			require.Len(t, want, 2)
			return want
		}},
		{"freeQueuesCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			q := &e.pool.q[0]
			tail := q.tail
			q.tail = q.head
			return []string{fmt.Sprintf("engine: KV blocks: free queue 0 counts %d blocks, tail %d; walked %d, last %d", q.blocks, q.head, q.blocks, tail)}
		}},
		{"indexFindsItsBlocks", checkedFCFS, func(t *testing.T, e *Engine) []string {
			key, id, ok := (*keyindex.Index)(&e.pool.index).Misplace()
			if !ok {
				t.Fatal("no index entry could be moved out of its probe")
			}
			return []string{fmt.Sprintf("engine: KV blocks: index holds %#x at node %d but finds node 0 (false)", key, id)}
		}},
		{"indexedBlocksCached", checkedFCFS, func(t *testing.T, e *Engine) []string {
			var key uint64
			var id int32
			e.pool.index.each(func(k uint64, i int32) { key, id = k, i })
			e.pool.nodes[id].key ^= 1
			return []string{fmt.Sprintf("engine: KV blocks: index maps %#x to node %d holding %#x (run 0)", key, id, key^1)}
		}},
		{"refsCountHolders", checkedFCFS, func(t *testing.T, e *Engine) []string {
			id := e.co.members[0].ids[0]
			e.pool.nodes[id].refs++
			return []string{fmt.Sprintf("engine: KV blocks: block %d counts 4 references, 3 requests hold it", id)}
		}},
		{"queuedIffUnheld", checkedFCFS, func(t *testing.T, e *Engine) []string {
			id := e.co.members[0].ids[0]
			e.pool.nodes[id].queued = true
			return []string{fmt.Sprintf("engine: KV blocks: block %d with 3 references is queued: true", id)}
		}},
		{"blocksHeldPlusFreeIsTotal", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.pool.total++
			free := e.pool.free()
			return []string{fmt.Sprintf("engine: KV blocks: blocks held %d + free %d != total 65 (free counted %d)", 64-free, free, free)}
		}},
		{"cacheCounted", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.pool.cached++
			return []string{"engine: KV blocks: counts 5 cached (2 evictable), index holds 4 + 0 copies, queues 2"}
		}},
		{"segmentsChecked", checkedRuns, func(t *testing.T, e *Engine) []string {
			p := &e.pool
			p.cached++
			return []string{fmt.Sprintf("engine: KV blocks: blocks held %d + free %d (counted %d) of %d; cached %d (counted %d), evictable %d (counted %d), copies 0 listed 0 (counted 0)",
				p.total-p.free(), p.free(), p.free(), p.total, p.cached-1, p.cached, p.evict, p.evict)}
		}},
		{"copiesBehindIndex", checkedFCFS, func(t *testing.T, e *Engine) []string {
			e.pool.ncopy++
			return []string{"engine: KV blocks: 1 copies counted, 0 held", "engine: KV blocks: counts 4 cached (2 evictable), index holds 4 + 1 copies, queues 2"}
		}},
	} {
		tested[strings.Fields(tc.invariant)[0]] = true
		t.Run(tc.invariant, func(t *testing.T) {
			e := tc.state(t)
			want := tc.corrupt(t, e)
			require.EqualError(t, e.Check(), strings.Join(want, "\n"))
		})
	}
	invariants := checkedInvariants(t)
	require.Len(t, invariants, 45)
	for _, name := range invariants {
		assert.True(t, tested[name], "no case corrupts %s", name)
	}
}

// stepsFrom0 plans and completes n steps of e a step a move from the
// instant 0, and returns the last one's end.
func stepsFrom0(t *testing.T, e *Engine, n int) time.Duration {
	t.Helper()
	now := time.Duration(0)
	for range n {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		now = p.End
	}
	return now
}

// checkedSpec is a speculative engine (K = 2) mid-run, its decode cohort
// never kept (decideFast), its speculative cohort's members planned.
func checkedSpec(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{MaxSeqs: 4, KVBlocks: 64, SpeculativeTokens: 2}, nil)
	require.NoError(t, err)
	e.Runner().OmitStreaks(true)
	for ref := range int32(3) {
		require.NoError(t, e.Add(0, Request{Ref: ref, Input: 40, Output: 30}))
	}
	_, err = e.Schedule(stepsFrom0(t, e, 3))
	require.NoError(t, err)
	require.Nil(t, e.co.count, "a decode cohort kept")
	require.NoError(t, e.Check())
	return e
}

// checkedInvariants are the checker's methods Check calls, read from
// check.go: the invariants.
func checkedInvariants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "check.go", nil, 0)
	require.NoError(t, err)
	var names []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Check" {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "c" && sel.Sel.Name != "cohortKept" {
							names = append(names, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	return names
}
