package workload

import (
	"io"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
)

func TestPoissonFixedLengths(t *testing.T) {
	g, err := NewPoisson(1, 5, 1000, Fixed(2000, 200))
	require.NoError(t, err)
	assert.Equal(t, OpenLoop, g.Loop())
	reqs := drain(t, g)
	require.Len(t, reqs, 1000)
	for i, r := range reqs {
		assert.Equal(t, uint64(i), r.ID)
		assert.Equal(t, 2000, r.InputTokens)
		assert.Equal(t, 200, r.OutputTokens)
		assert.Nil(t, r.PrefixHashes)
		if i > 0 {
			assert.GreaterOrEqual(t, r.Arrival, reqs[i-1].Arrival)
		}
	}
	assert.InEpsilon(t, 200*time.Second, reqs[999].Arrival, 0.1)
}

func TestSyntheticDurationEnds(t *testing.T) {
	g, err := NewSynthetic(Synthetic{Seed: 1, Duration: time.Minute, Arrival: Arrival{Rate: 10}, Lengths: Fixed(1, 1)})
	require.NoError(t, err)
	reqs := drain(t, g)
	assert.Less(t, reqs[len(reqs)-1].Arrival, time.Minute)
	assert.InEpsilon(t, 600, len(reqs), 0.1)
}

func TestSyntheticValidate(t *testing.T) {
	_, err := NewSynthetic(Synthetic{Count: -1, Prefix: PrefixReuse{Probability: 2}})
	require.Error(t, err)
	for _, want := range []string{"Synthetic.Count", "Synthetic.Lengths is nil", "Arrival.Rate", "PrefixReuse.Probability", "PrefixReuse.Groups"} {
		assert.Contains(t, err.Error(), want)
	}
}

// Prefix ids follow Mooncake's convention: ceil(input/block) ids, the full
// blocks of a shared system prompt carry their group's ids, every other
// block is fresh.
func TestPrefixReuseBlockIDs(t *testing.T) {
	p := HighReuse
	g, err := NewSynthetic(Synthetic{Seed: 4, Count: 2000, Arrival: Arrival{Rate: 1},
		Lengths: Independent{Input: Uniform{Center: 1000, RangeRatio: 0.5}, Output: Constant{10}}, Prefix: p})
	require.NoError(t, err)
	seen := map[uint64]int{}
	shared := 0
	for _, r := range drain(t, g) {
		assert.Equal(t, (r.InputTokens+511)/512, len(r.PrefixHashes))
		assert.Equal(t, 512, r.PrefixBlockTokens)
		assert.GreaterOrEqual(t, r.InputTokens, p.PrefixTokens+500)
		if r.PrefixHashes[0] < uint64(p.Groups*4) {
			shared++
			g := r.PrefixHashes[0] / 4
			assert.Equal(t, []uint64{4 * g, 4*g + 1, 4*g + 2, 4*g + 3}, r.PrefixHashes[:4])
			for _, id := range r.PrefixHashes[4:] {
				seen[id]++
			}
			continue
		}
		for _, id := range r.PrefixHashes {
			seen[id]++
		}
	}
	assert.InEpsilon(t, 0.9*2000, shared, 0.05)
	for id, n := range seen {
		assert.Equal(t, 1, n, "fresh id %d reused", id)
	}
}

// A load whose request count an int cannot hold is refused in the user's
// own terms (Rate, Duration), not as an internal count overflow.
func TestSyntheticRefusesUncountableLoad(t *testing.T) {
	year := 365 * 24 * time.Hour
	for _, c := range []struct {
		what string
		cfg  Synthetic
		want string
	}{
		{"rate", Synthetic{Duration: year, Arrival: Arrival{Rate: 1e30}, Lengths: Fixed(1, 1)},
			"workload: Arrival.Rate 1e+30 req/s over Duration 8760h0m0s is about 3.15e+37 requests, more than the 9223372036854775807 a workload can count"},
		{"repeating schedule", Synthetic{Duration: year, Arrival: Arrival{Schedule: Schedule{Steps: []RateStep{{time.Hour, 1e12}, {time.Hour, 0}}, Repeat: true}}, Lengths: Fixed(1, 1)},
			"workload: Arrival.Schedule (mean 5e+11 req/s) over 8760h0m0s is about 1.58e+19 requests, more than the 9223372036854775807 a workload can count"},
		{"schedule", Synthetic{Arrival: Arrival{Schedule: Schedule{Steps: []RateStep{{year, 1e15}}}}, Lengths: Fixed(1, 1)},
			"workload: Arrival.Schedule (mean 1e+15 req/s) over 8760h0m0s is about 3.15e+22 requests, more than the 9223372036854775807 a workload can count"},
	} {
		_, err := NewSynthetic(c.cfg)
		assert.EqualError(t, err, c.want, c.what)
	}
	_, err := NewSynthetic(Synthetic{Count: math.MinInt + 1, Arrival: Arrival{Rate: 1}, Lengths: Fixed(1, 1)})
	assert.EqualError(t, err, "workload: Synthetic.Count must be >= 0, got -9223372036854775807", "one error, not a second about a missing Count")
	_, err = NewSynthetic(Synthetic{Duration: year, Arrival: Arrival{Rate: 1e9}, Lengths: Fixed(1, 1)})
	assert.NoError(t, err, "3.15e16 requests can be counted")
	_, err = NewSynthetic(Synthetic{Count: 10, Duration: year, Arrival: Arrival{Rate: 1e30}, Lengths: Fixed(1, 1)})
	assert.NoError(t, err, "a Count bounds the workload")
}

// sampledJoint is a Joint the generator cannot read as constants: it
// samples through the Joint as any other.
type sampledJoint struct{ Independent }

// A generator of fixed lengths reads them once (fixedLengths) instead of
// sampling them a request: the requests are those the sampled path yields,
// with prefix reuse on and off.
func TestFixedLengthsAreSampledLengths(t *testing.T) {
	for _, prefix := range []PrefixReuse{{}, {PrefixTokens: 512, Probability: 0.5, Groups: 3}} {
		cfg := Synthetic{Seed: 7, Count: 500, Arrival: Arrival{Rate: 3}, Lengths: Fixed(300, 40), Prefix: prefix}
		fast, err := NewSynthetic(cfg)
		require.NoError(t, err)
		require.True(t, fast.fixed)
		cfg.Lengths = sampledJoint{Fixed(300, 40)}
		slow, err := NewSynthetic(cfg)
		require.NoError(t, err)
		require.False(t, slow.fixed)
		for {
			a, errA := fast.Next()
			b, errB := slow.Next()
			require.Equal(t, errB, errA)
			require.Equal(t, b, a)
			if errA != nil {
				break
			}
		}
	}
}

// TestNextIntoIsNewRequest holds NextInto, which writes a request with
// prefix ids in place, to newRequest's request, returned and given its
// class after (its twin, as closed-loop sources still build theirs):
// every field of every request, with and without prefix reuse, uniform
// and Zipf groups, some prompts private, Mooncake's blocks and 16
// tokens', a class and none, fixed lengths and drawn ones.
func TestNextIntoIsNewRequest(t *testing.T) {
	for i, cfg := range []Synthetic{
		{Seed: 3, Count: 400, Arrival: Arrival{Rate: 5}, Lengths: Fixed(500, 20), Prefix: FleetHighReuse},
		{Seed: 4, Count: 400, Arrival: Arrival{Rate: 5}, Lengths: Fixed(700, 20), Prefix: LowReuse, Class: "batch"},
		{Seed: 5, Count: 400, Arrival: Arrival{Rate: 5}, Lengths: Independent{Input: Uniform{Center: 1500, RangeRatio: 0.9}, Output: Constant{Tokens: 9}},
			Prefix: PrefixReuse{Groups: 7, PrefixTokens: 1000, Probability: 0.6, BlockTokens: 16}},
		{Seed: 6, Count: 400, Arrival: Arrival{Rate: 5}, Lengths: Fixed(300, 20), Class: "x"},
	} {
		g, err := NewSynthetic(cfg)
		require.NoError(t, err)
		twin, err := NewSynthetic(cfg)
		require.NoError(t, err)
		var r Request
		for k := 0; ; k++ {
			scribble(t, &r)
			err := (*generatorInto)(g).NextInto(&r)
			at, ok := twin.arr.next()
			if !ok {
				require.Equal(t, io.EOF, err, "config %d", i)
				break
			}
			require.NoError(t, err)
			in, out := twin.fixedIn, twin.fixedOut
			if !twin.fixed {
				in, out = twin.cfg.Lengths.Sample(twin.in, twin.out)
			}
			want := newRequest(twin.next, at, in, out, twin.ids, twin.prefix)
			want.Class = twin.cfg.Class
			twin.next++
			require.Equal(t, want, r, "config %d, request %d", i, k)
		}
	}
}

// scribble writes every field of *r over with a value no generator
// gives, so that a NextInto that leaves one unwritten fails
// TestNextIntoIsNewRequest; a field it does not set fails the test.
func scribble(t *testing.T, r *Request) {
	*r = Request{ID: 1 << 60, Arrival: -3, InputTokens: -1, OutputTokens: -2, PrefixHashes: []uint64{9, 9},
		PrefixBlockTokens: -4, PrefixTwoRuns: ascend.Rising(), Conversation: 7, Turn: 8, Class: "scribbled",
		Priority: -5, Failed: true, HashesCoverOutput: true}
	x := reflect.ValueOf(r).Elem()
	for k := range x.NumField() {
		require.False(t, x.Field(k).IsZero(), "field %s not scribbled", x.Type().Field(k).Name)
	}
}
