package workload

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record is what the toy driver saw of one request.
type record struct {
	Request
	Finish time.Duration
}

// serve is a toy driver for closed-loop sources: an infinitely parallel
// server that answers each request after service(r), failing those fail(r)
// says. It follows the Feedback contract: drain Next until ErrWaiting,
// then report the earliest finish.
func serve(t *testing.T, src Source, service func(Request) time.Duration, fail func(Request) bool) []record {
	t.Helper()
	fb := src.(Feedback)
	var done, flying []record
	for {
		for {
			r, err := src.Next()
			if errors.Is(err, ErrWaiting) {
				break
			}
			if err == io.EOF {
				require.Empty(t, flying, "EOF with requests in flight")
				return done
			}
			require.NoError(t, err)
			if len(done) > 0 {
				require.GreaterOrEqual(t, r.Arrival, done[len(done)-1].Finish, "arrival before the Finished call that released it")
			}
			flying = append(flying, record{r, r.Arrival + service(r)})
		}
		require.NotEmpty(t, flying, "ErrWaiting with nothing in flight")
		slices.SortStableFunc(flying, func(a, b record) int { return int(a.Finish - b.Finish) })
		f := flying[0]
		flying = flying[1:]
		done = append(done, f)
		fb.Finished(f.ID, f.Finish, fail == nil || !fail(f.Request))
	}
}

func second(Request) time.Duration { return time.Second }

func TestClientsClosedLoop(t *testing.T) {
	p, err := NewClients(Clients{Seed: 1, Clients: 3, Requests: 9, Think: Think{Mean: 2 * time.Second},
		Lengths: Independent{Input: Uniform{Center: 100, RangeRatio: 0.5}, Output: Constant{10}}})
	require.NoError(t, err)
	assert.Equal(t, ClosedLoop, LoopOf(p))
	recs := serve(t, p, second, nil)
	require.Len(t, recs, 9)
	var at []time.Duration
	for _, r := range recs {
		at = append(at, r.Arrival)
	}
	s := time.Second
	assert.Equal(t, []time.Duration{0, 0, 0, 3 * s, 3 * s, 3 * s, 6 * s, 6 * s, 6 * s}, at)
}

// Client i's k-th request has the same lengths however fast the server is.
func TestClientsCommonRandomNumbers(t *testing.T) {
	cfg := Clients{Seed: 5, Clients: 4, Duration: time.Minute, Think: Think{Mean: time.Second, Exponential: true},
		Lengths: Independent{Input: LogNormalMean(1000, 1), Output: LogNormalMean(100, 1)}}
	lengths := func(service func(Request) time.Duration) map[[2]int][2]int {
		p, err := NewClients(cfg)
		require.NoError(t, err)
		w := &whichClient{ClientPool: p, client: map[uint64]int{}}
		byClient := map[[2]int][2]int{}
		count := map[int]int{}
		for _, r := range serve(t, w, service, nil) {
			c := w.client[r.ID]
			byClient[[2]int{c, count[c]}] = [2]int{r.InputTokens, r.OutputTokens}
			count[c]++
		}
		return byClient
	}
	fast := lengths(func(r Request) time.Duration { return time.Duration(r.OutputTokens) * 10 * time.Millisecond })
	slow := lengths(func(r Request) time.Duration { return time.Duration(r.OutputTokens) * 50 * time.Millisecond })
	assert.Greater(t, len(fast), len(slow))
	for k, v := range slow {
		assert.Equal(t, fast[k], v, "client %d request %d", k[0], k[1])
	}
}

// whichClient notes which client sent each request.
type whichClient struct {
	*ClientPool
	client map[uint64]int
}

func (w *whichClient) Next() (Request, error) {
	r, err := w.ClientPool.Next()
	if err == nil {
		w.client[r.ID] = w.inflight[r.ID]
	}
	return r, err
}

func TestClientsValidate(t *testing.T) {
	_, err := NewClients(Clients{Think: Think{Mean: -1}})
	require.Error(t, err)
	for _, want := range []string{"Clients.Clients", "Requests or Duration", "Clients.Lengths is nil", "Think.Mean"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestConversationsCarryHistory(t *testing.T) {
	cfg := Conversations{Seed: 3, Count: 20, Arrival: Arrival{Rate: 1},
		Turns: Uniform{Center: 4, RangeRatio: 0.5}, FirstInput: LogNormalMean(600, 0.5),
		UserInput: Uniform{Center: 100, RangeRatio: 0.5}, Output: Uniform{Center: 200, RangeRatio: 0.5},
		Think: Think{Mean: 5 * time.Second}, Prefix: PrefixReuse{Groups: 2, PrefixTokens: 1024, Probability: 1, BlockTokens: 16}}
	src, err := NewConversations(cfg)
	require.NoError(t, err)
	assert.Equal(t, ClosedLoop, src.Loop())
	recs := serve(t, src, second, nil)
	last := map[uint64]record{}
	turns := 0
	for _, r := range recs {
		assert.Len(t, r.PrefixHashes, (r.InputTokens+r.OutputTokens+15)/16, "ids over the prompt and the answer")
		prev, seen := last[r.Conversation]
		if r.Turn == 0 {
			assert.False(t, seen)
			assert.Less(t, r.PrefixHashes[0], uint64(2*64), "shared system prompt ids")
		} else {
			require.True(t, seen)
			assert.Equal(t, prev.Turn+1, r.Turn)
			assert.Equal(t, prev.Finish+5*time.Second, r.Arrival)
			grown := r.InputTokens - prev.InputTokens - prev.OutputTokens
			assert.True(t, grown >= 50 && grown <= 150, "new user tokens %d", grown)
			keep := (prev.InputTokens + prev.OutputTokens) / 16 // the last turn's answer too
			assert.Equal(t, prev.PrefixHashes[:keep], r.PrefixHashes[:keep])
			turns++
		}
		last[r.Conversation] = r
	}
	assert.Len(t, last, 20)
	assert.Greater(t, turns, 20)
}

func TestConversationsEndOnFailureAndMaxInput(t *testing.T) {
	cfg := Conversations{Seed: 1, Count: 5, Arrival: Arrival{Rate: 1}, Turns: Constant{10},
		FirstInput: Constant{100}, UserInput: Constant{50}, Output: Constant{50}, MaxInput: 400}
	src, err := NewConversations(cfg)
	require.NoError(t, err)
	recs := serve(t, src, second, nil)
	// 100, 200, 300, 400: the fifth turn would need 500 > 400.
	assert.Len(t, recs, 20)
	src, err = NewConversations(cfg)
	require.NoError(t, err)
	recs = serve(t, src, second, func(r Request) bool { return r.Turn == 1 })
	assert.Len(t, recs, 10, "a failed turn ends its conversation")
}

// Turn k+1's ids begin with all of turn k's full prompt blocks, the shared
// system prompt's first among them; every id after them is fresh (turn
// k's last, partial block and its answer included), never seen in any
// earlier request: the history is a shared prefix only for a replica that
// served turn k.
func TestConversationsExtendPreviousPrompt(t *testing.T) {
	p := FleetHighReuse
	cfg := Conversations{Seed: 9, Count: 30, Arrival: Arrival{Rate: 0.5},
		Turns: Uniform{Center: 5, RangeRatio: 0.4}, FirstInput: Uniform{Center: 500, RangeRatio: 0.5},
		UserInput: Uniform{Center: 120, RangeRatio: 0.5}, Output: Uniform{Center: 200, RangeRatio: 0.5},
		Think: Think{Mean: 10 * time.Second}, Prefix: p}
	src, err := NewConversations(cfg)
	require.NoError(t, err)
	system := p.PrefixTokens / p.BlockTokens
	seen := map[uint64]bool{}
	last := map[uint64]Request{}
	followUps, partial := 0, 0
	for _, rec := range serve(t, src, second, nil) {
		r := rec.Request
		// Its ids cover its prompt and its answer (HashesCoverOutput).
		require.True(t, r.HashesCoverOutput)
		require.Len(t, r.PrefixHashes, (r.InputTokens+r.OutputTokens+p.BlockTokens-1)/p.BlockTokens)
		kept := system // the system prompt's blocks, shared across conversations
		if prev, ok := last[r.Conversation]; ok {
			// Turn k+1 keeps every full block of turn k's prompt and
			// answer, the answer's included, so a cache finds them.
			kept = (prev.InputTokens + prev.OutputTokens) / p.BlockTokens
			assert.Equal(t, prev.PrefixHashes[:kept], r.PrefixHashes[:kept], "conversation %d turn %d", r.Conversation, r.Turn)
			if (prev.InputTokens+prev.OutputTokens)%p.BlockTokens != 0 {
				partial++
				assert.NotEqual(t, prev.PrefixHashes[kept], r.PrefixHashes[kept], "turn k's partial block is fresh in turn k+1")
			}
			followUps++
		}
		assert.Equal(t, r.PrefixHashes[0]/uint64(system), r.PrefixHashes[system-1]/uint64(system), "one group's system prompt")
		for i, id := range r.PrefixHashes[kept:] {
			assert.False(t, seen[id], "conversation %d turn %d: id %d at %d is not fresh", r.Conversation, r.Turn, id, kept+i)
		}
		for _, id := range r.PrefixHashes[system:] {
			seen[id] = true
		}
		last[r.Conversation] = r
	}
	assert.Greater(t, followUps, 60)
	assert.Positive(t, partial)
}

// TestFlightIsAMap holds ChatSource's turns in flight by request id
// (flight) to a map: ids added in order, some skipped, taken in any
// order, again, and ids never added or long gone.
func TestFlightIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	for range 200 {
		var f flight
		m := map[uint64]*conversation{}
		next := uint64(rng.IntN(1000))
		for range 1 + rng.IntN(400) {
			if rng.IntN(2) == 0 {
				next += uint64(rng.IntN(3) / 2) // now and then an id skipped
				c := &conversation{id: next}
				f.add(next, c)
				m[next] = c
				next++
			} else {
				id := next - uint64(rng.IntN(20)) + 2 // in flight, finished, or not yet added
				want, ok := m[id]
				delete(m, id)
				if got := f.take(id); got != want || (got != nil) != ok {
					t.Fatalf("take(%d) = %p, the map's %p", id, got, want)
				}
			}
			require.Equal(t, len(m), f.n)
		}
	}
}

// TestConversationIDsInPlace holds a ChatSource that extends each
// conversation's ids in place (IDsInPlace, sim's runner's) to its twin,
// which copies them a turn (Next's for any caller): the same turns, ids
// and all, over random configurations (lengths with bounds, whose
// arrays are cut with room for every turn, and without, whose arrays
// grow; context windows; block sizes; shared prefixes or none), turns
// finished in random order, some failed. And each turn's ids stay as
// they were yielded until its Finished call (a conversation's room cut
// from the slab overlapping another's array would write over them).
func TestConversationIDsInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 7))
	lengths := func(center int) Length {
		switch rng.IntN(4) {
		case 0:
			return Constant{Tokens: 1 + rng.IntN(center)}
		case 1:
			return LogNormalMean(float64(center), 0.5) // no bound: the array grows
		default:
			return Uniform{Center: 1 + rng.IntN(center), RangeRatio: rng.Float64()}
		}
	}
	grown, partial := 0, 0
	for range 150 {
		cfg := Conversations{Seed: rng.Uint64(), Count: 1 + rng.IntN(40), Arrival: Arrival{Rate: 0.2 + rng.Float64()},
			Turns: Uniform{Center: 1 + rng.IntN(12), RangeRatio: rng.Float64()}, FirstInput: lengths(800),
			UserInput: lengths(300), Output: lengths(400), Think: Think{Mean: time.Duration(rng.IntN(10)) * time.Second}}
		if rng.IntN(4) == 0 {
			cfg.MaxInput = 500 + rng.IntN(6_000)
		}
		if rng.IntN(5) > 0 {
			cfg.Prefix = PrefixReuse{Groups: 1 + rng.IntN(20), PrefixTokens: rng.IntN(2_000), Probability: rng.Float64(),
				BlockTokens: []int{0, 1, 16, 100}[rng.IntN(4)]}
		}
		fast, err := NewConversations(cfg)
		require.NoError(t, err)
		(*chatInto)(fast).IDsInPlace()
		slow, err := NewConversations(cfg)
		require.NoError(t, err)
		type flying struct {
			id    uint64
			ids   []uint64 // as yielded
			yield []uint64 // a copy
		}
		var live []flying
		now := time.Duration(0)
		for {
			var r Request
			err := (*chatInto)(fast).NextInto(&r)
			w, werr := slow.Next()
			require.Equal(t, werr, err)
			if err == nil {
				require.Equal(t, w, r, "%v", cfg)
				require.Equal(t, len(r.PrefixHashes), cap(r.PrefixHashes), "a turn's ids capped at their length")
				live = append(live, flying{r.ID, r.PrefixHashes, slices.Clone(r.PrefixHashes)})
				if r.Turn > 0 && r.PrefixHashes != nil && (r.InputTokens+r.OutputTokens)%r.PrefixBlockTokens != 0 {
					partial++
				}
				continue
			}
			if err == io.EOF {
				break
			}
			require.ErrorIs(t, err, ErrWaiting)
			require.NotEmpty(t, live)
			i := rng.IntN(len(live))
			f := live[i]
			live = slices.Delete(live, i, i+1)
			require.Equal(t, f.yield, f.ids, "request %d's ids changed before its Finished call", f.id)
			now += time.Duration(rng.IntN(5)) * time.Second
			ok := rng.IntN(10) > 0
			c := fast.inflight.convs[f.id-fast.inflight.base] // its conversation, still in flight
			before := cap(c.ids)
			fast.Finished(f.id, now, ok)
			slow.Finished(f.id, now, ok)
			if c.ids != nil && cap(c.ids) != before {
				grown++
			}
		}
	}
	assert.Positive(t, grown, "some conversation's array grew")
	assert.Positive(t, partial, "some turn's last block is partial")
}

// TestMoreIsNotErrWaiting holds a ChatSource's More (sim's runner asks
// it after each turn it pulls) to what its NextInto then answers: once
// the first turns' arrivals were found over, true exactly when that is a
// turn or io.EOF, not ErrWaiting; before, true, at every point
// of random runs whose turns finish in random order, several before a
// pull, some failed, with schedules of first turns that end early.
func TestMoreIsNotErrWaiting(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 7))
	for range 300 {
		cfg := Conversations{Seed: rng.Uint64(), Count: 1 + rng.IntN(12), Arrival: Arrival{Rate: 0.5 + rng.Float64()},
			Turns: Uniform{Center: 1 + rng.IntN(5), RangeRatio: rng.Float64()}, FirstInput: Constant{Tokens: 100},
			UserInput: Constant{Tokens: 50}, Output: Constant{Tokens: 20}, Think: Think{Mean: time.Second, Exponential: true}}
		if rng.IntN(4) == 0 {
			cfg.Arrival.Schedule = Schedule{Steps: []RateStep{{Duration: time.Duration(1+rng.IntN(8)) * time.Second, Rate: 1}}}
		}
		s, err := NewConversations(cfg)
		require.NoError(t, err)
		si := (*chatInto)(s)
		var inFlight []uint64
		for step := 0; ; step++ {
			more, over := si.More(), s.startsDone
			var r Request
			err := si.NextInto(&r)
			if over { // else More is true, and NextInto finds them over, or starts one
				require.Equal(t, err != ErrWaiting, more, "step %d: More %v, NextInto answered %v", step, more, err)
			} else {
				require.True(t, more, "step %d: More false before the first turns' arrivals were found over", step)
			}
			if err == io.EOF {
				break
			}
			if err == nil {
				inFlight = append(inFlight, r.ID)
				continue
			}
			for range 1 + rng.IntN(3) { // finish some, then pull again
				if len(inFlight) == 0 {
					break
				}
				k := rng.IntN(len(inFlight))
				s.Finished(inFlight[k], time.Duration(step)*time.Second, rng.IntN(8) > 0)
				inFlight = append(inFlight[:k], inFlight[k+1:]...)
			}
		}
	}
}
