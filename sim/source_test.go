package sim

import (
	"io"
	"time"

	"github.com/servesim/servesim/workload"
)

// poisson is a minimal open-loop source for the tests of this package:
// Poisson arrivals at rate per second, fixed input length, output lengths
// from out (fixed when nil), n requests.
type poisson struct {
	rate  float64
	in    int
	out   func() int
	fixed int
	n     int
	t     float64
	id    uint64
	seed  uint64
	draws interface{ ExpFloat64() float64 }
}

func newPoisson(seed uint64, rate float64, n, in, out int) *poisson {
	return &poisson{rate: rate, in: in, fixed: out, n: n, seed: seed, draws: workload.NewStream(seed, "test/arrivals")}
}

func (p *poisson) Next() (workload.Request, error) {
	if int(p.id) >= p.n {
		return workload.Request{}, io.EOF
	}
	p.t += p.draws.ExpFloat64() / p.rate
	o := p.fixed
	if p.out != nil {
		o = p.out()
	}
	r := workload.Request{ID: p.id, Arrival: time.Duration(p.t * 1e9), InputTokens: p.in, OutputTokens: o}
	p.id++
	return r, nil
}

// list is a source over a fixed slice of requests.
type list []workload.Request

func (l *list) Next() (workload.Request, error) {
	if len(*l) == 0 {
		return workload.Request{}, io.EOF
	}
	r := (*l)[0]
	*l = (*l)[1:]
	return r, nil
}
