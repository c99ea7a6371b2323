package workload

import (
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two Poisson sources of rates 1 and 3 merge into a Poisson source of rate
// 4: over 2,000 s about 8,000 requests (±3σ = ±268), in arrival order,
// numbered 0, 1, 2, …, each keeping its class, with the exponential
// inter-arrival's coefficient of variation 1 (±0.05).
func TestMergeIsTheSuperposition(t *testing.T) {
	src := func(seed uint64, rate float64, class string) Source {
		g, err := NewSynthetic(Synthetic{Seed: seed, Duration: 2000 * time.Second, Arrival: Arrival{Rate: rate}, Lengths: Fixed(10, 10), Class: class})
		require.NoError(t, err)
		return g
	}
	m, err := Merge(src(1, 1, "a"), src(2, 3, "b"))
	require.NoError(t, err)
	var last time.Duration
	count := map[string]int{}
	var gaps []float64
	for i := 0; ; i++ {
		r, err := m.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.Equal(t, uint64(i), r.ID)
		require.GreaterOrEqual(t, r.Arrival, last)
		gaps = append(gaps, (r.Arrival - last).Seconds())
		last = r.Arrival
		count[r.Class]++
	}
	n := count["a"] + count["b"]
	assert.InDelta(t, 8000, n, 268)
	assert.InDelta(t, 2000, count["a"], 134)
	assert.InDelta(t, 6000, count["b"], 232)
	mean, sq := 0.0, 0.0
	for _, g := range gaps {
		mean += g / float64(len(gaps))
	}
	for _, g := range gaps {
		sq += (g - mean) * (g - mean) / float64(len(gaps)-1)
	}
	assert.InDelta(t, 1, math.Sqrt(sq)/mean, 0.05)
}

type failing struct{ n int }

func (f *failing) Next() (Request, error) {
	if f.n == 0 {
		return Request{}, errors.New("line 7: bad")
	}
	f.n--
	return Request{Arrival: time.Second, InputTokens: 1, OutputTokens: 1}, nil
}

func TestMergeRefusesWhatItCannotOrder(t *testing.T) {
	_, err := Merge()
	require.Error(t, err)
	pool, err := NewClients(Clients{Clients: 2, Requests: 4, Lengths: Fixed(1, 1)})
	require.NoError(t, err)
	_, err = Merge(&failing{3}, pool)
	require.ErrorContains(t, err, "source 1 is closed-loop")

	m, err := Merge(&failing{1})
	require.NoError(t, err)
	_, err = m.Next()
	require.NoError(t, err)
	_, err = m.Next()
	require.ErrorContains(t, err, "merged source 0: line 7: bad")
	_, err = m.Next()
	require.Error(t, err, "the error stays")
}
