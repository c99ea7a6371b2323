package engine

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/addinto"
)

// addInPlace adds r through the in-place route (internal/addinto), as
// sim's runner sends: r written into the record Next returned, then
// Commit. It checks that the record it gets for the next is zero.
func addInPlace(t testing.TB, e *Engine, now time.Duration, r Request) error {
	t.Helper()
	next, ok := addinto.Next.(func(*Engine) *Request)
	require.True(t, ok, "internal/addinto's Next is the engine's")
	commit, ok := addinto.Commit.(func(*Engine, time.Duration) (*Request, error))
	require.True(t, ok, "internal/addinto's Commit is the engine's")
	if r.Remote { // as sim's handoff commits a Remote request
		commit, ok = addinto.CommitRemote.(func(*Engine, time.Duration) (*Request, error))
		require.True(t, ok, "internal/addinto's CommitRemote is the engine's")
	}
	q := next(e)
	require.True(t, reflect.DeepEqual(*q, Request{}), "Next's record is zero: %+v", *q)
	*q = r
	staged := e.staged
	q, err := commit(e, now)
	if s, _ := e.reqs.get(r.Ref); err == nil && s == staged {
		addsInPlace++
		if r.Remote {
			remoteInPlace++
		}
	}
	require.True(t, reflect.DeepEqual(*q, Request{}), "Commit's next record is zero: %+v", *q)
	require.Same(t, q, next(e), "Next is the record Commit returned")
	return err
}

// addsInPlace counts the requests addInPlace saw Commit add in place
// (not handed to Add), so that a test can say the route was taken.
var addsInPlace int

// remoteInPlace counts those of them that were Remote (CommitRemote).
var remoteInPlace int

// TestAddIntoEqualsAdd holds the in-place Add (Commit) to its twin, Add:
// requests Add refuses or treats apart (invalid, a duplicate Ref, a
// negative or far Ref, too long, cut at MaxModelLen, Remote, too long
// without chunked prefill, a full waiting queue) and plain ones, each
// added to two engines, one by each path: the same errors, the same
// readings after each, then the same outcomes, step by step, to the end.
// (FuzzEngine's scenarios add through the route on their fast engine.)
func TestAddIntoEqualsAdd(t *testing.T) {
	reqs := []Request{
		{Ref: 0, Input: 100, Output: 10},
		{Ref: 30, Input: 20, Output: 3}, // the dense table grows past the Remote requests' Refs
		{Ref: 1, Input: 0, Output: 10},
		{Ref: 2, Input: 10, Output: 0},
		{Ref: 3, Arrival: 5, Deadline: 4, Input: 10, Output: 10},
		{Ref: 0, Input: 10, Output: 10}, // a duplicate
		{Ref: 4, Arrival: 1, Deadline: 9, Input: 30, Output: 300, Priority: 2, Class: 1, Prefix: []uint64{1, 2}, PrefixBlockTokens: 16},
		{Ref: 6, Input: 600, Output: 8},
		{Ref: 7, Input: 40, Output: 600, OutputKnown: true}, // cut at MaxModelLen
		{Ref: 8, Input: 512, Output: 5},                     // no room for a token
		{Ref: 9, Input: 50, Output: 4, Remote: true},
		{Ref: 10, Input: 50, Output: 1, Remote: true},
		{Ref: 9, Input: 60, Output: 4, Remote: true},                           // a duplicate
		{Ref: 13, Arrival: 1, Deadline: 9, Input: 50, Output: 4, Remote: true}, // a Deadline: to Add
		{Ref: 14, Input: 510, Output: 5, Remote: true},                         // cut at MaxModelLen to 2
		{Ref: 15, Input: 511, Output: 5, Remote: true},                         // cut to 1: nothing to decode
		{Ref: 16, Input: 190, Output: 20, Remote: true},                        // too long without chunked prefill
		{Ref: 17, Input: 30, Output: 9, Remote: true, Prefix: []uint64{5, 6}, PrefixBlockTokens: 16},
		{Ref: 2000, Input: 50, Output: 4, Remote: true}, // past the dense table: to Add
		{Ref: 3000, Input: 60, Output: 3},               // the dense table grows
		{Ref: 11, Input: 100, Output: 20, Prefix: []uint64{1, 2, 3}, PrefixBlockTokens: 16},
		{Ref: 12, Input: 100, Output: 20, Prefix: []uint64{1, 2, 3, 4}, PrefixBlockTokens: 16},
	}
	mapped := []Request{ // added last, in the second round: with a map, every request goes to Add
		{Ref: -3, Input: 20, Output: 5}, // the map
		{Ref: -3, Input: 20, Output: 5}, // a duplicate there
		{Ref: 1 << 20, Input: 20, Output: 5},
		{Ref: 5, Input: 20, Output: 5},
		{Ref: 5, Input: 20, Output: 5},
	}
	cfgs := []Config{
		{KVBlocks: 400, MaxModelLen: 512},
		{KVBlocks: 400, MaxModelLen: 512, MaxWaiting: 3},
		{KVBlocks: 400, MaxModelLen: 512, DisableChunkedPrefill: true, MaxBatchedTokens: 200},
		{KVBlocks: 400, MaxModelLen: 512, RemoteKV: true, Policy: Priority{}},
		{KVBlocks: 400, MaxModelLen: 512, RemoteKV: true},
		{KVBlocks: 400, MaxModelLen: 512, RemoteKV: true, MaxWaiting: 3},
		{KVBlocks: 400, MaxModelLen: 512, RemoteKV: true, DisableChunkedPrefill: true, MaxBatchedTokens: 200},
	}
	addsInPlace, remoteInPlace = 0, 0
	defer func() {
		if addsInPlace < 10 { // 14
			t.Errorf("%d requests added in place: the cases no longer take the route", addsInPlace)
		}
		if remoteInPlace < 6 {
			t.Errorf("%d Remote requests added in place: the cases no longer take the route", remoteInPlace)
		}
	}()
	for i, cfg := range cfgs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			a, err := New(cfg, nil)
			require.NoError(t, err)
			b, err := New(cfg, nil)
			require.NoError(t, err)
			var now time.Duration
			for round := range 2 { // the second with every Ref free again, and seqs recycled
				for j, r := range append(reqs, mapped[:round*len(mapped)]...) {
					now += time.Millisecond
					r.Arrival += now
					if r.Deadline != 0 {
						r.Deadline += now
					}
					errA, errB := a.Add(now, r), addInPlace(t, b, now, r)
					require.Equal(t, fmt.Sprint(errA), fmt.Sprint(errB), "round %d, request %d", round, j)
					require.Equal(t, state(a, now), state(b, now), "round %d, request %d", round, j)
				}
				for range 10_000 {
					pa, errA := a.Schedule(now)
					pb, errB := b.Schedule(now)
					require.Equal(t, fmt.Sprint(errA), fmt.Sprint(errB))
					require.Equal(t, fmt.Sprintf("%+v", pa), fmt.Sprintf("%+v", pb))
					if pa == nil {
						break
					}
					for _, rv := range pa.Reserved { // its KV lands at once
						require.NoError(t, a.Land(now, rv.Ref))
						require.NoError(t, b.Land(now, rv.Ref))
					}
					oa, errA := a.Complete(pa.End)
					ob, errB := b.Complete(pb.End)
					require.Equal(t, fmt.Sprint(errA), fmt.Sprint(errB))
					require.Equal(t, fmt.Sprintf("%+v", *oa), fmt.Sprintf("%+v", *ob))
					now = pa.End
					require.Equal(t, state(a, now), state(b, now))
				}
				require.Zero(t, a.Running()+a.Waiting(), "served to the end")
			}
		})
	}
}
