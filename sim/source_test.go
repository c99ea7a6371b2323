package sim

import (
	"io"
	"testing"

	"github.com/servesim/servesim/workload"
)

// poisson is the Atlas-shaped Poisson workload of these tests.
func poisson(t testing.TB, seed uint64, rate float64, n int, lengths workload.Joint) workload.Source {
	t.Helper()
	g, err := workload.NewPoisson(seed, rate, n, lengths)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// counted counts the requests a source yields.
type counted struct {
	workload.Source
	n int
}

func (c *counted) Next() (workload.Request, error) {
	r, err := c.Source.Next()
	if err == nil {
		c.n++
	}
	return r, err
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
