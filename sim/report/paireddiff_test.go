package report

import (
	"math"
	"testing"

	"github.com/servesim/servesim/sim/stats"
	"github.com/stretchr/testify/assert"
)

func TestPairedDiff(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		in   stats.Interval
		want string
	}{
		{stats.Interval{Center: 31.74, Lo: 19.41, Hi: 44.02, N: 8}, "+31.7 [+19.4, +44.0]"},
		{stats.Interval{Center: -11.3, Lo: -11.8, Hi: -10.8, N: 12}, "-11.3 [-11.8, -10.8]"},
		{stats.Interval{Center: 0, Lo: 0, Hi: 0, N: 4}, "+0.0 [+0.0, +0.0]"},
		{stats.Interval{Center: 5, Lo: nan, Hi: nan, N: 1}, "+5.0"},
		{stats.Interval{Center: nan, Lo: nan, Hi: nan, N: 3}, "-"},
		{stats.Interval{}, "-"},
	} {
		assert.Equal(t, c.want, PairedDiff(c.in), "%+v", c.in)
	}
}
