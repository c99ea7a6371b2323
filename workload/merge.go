package workload

import (
	"errors"
	"fmt"
	"io"
)

// Merged interleaves open-loop sources in arrival order: a workload of
// several request classes, each its own source (two Poisson sources of
// rates λ₁ and λ₂ merge into a Poisson source of rate λ₁ + λ₂). Requests
// are renumbered 0, 1, 2, … in the order yielded, so that IDs stay unique;
// everything else (class, prefixes, conversation) is the source's own.
// Requests due at the same instant come in the order of the sources.
type Merged struct {
	srcs []Source
	head []Request // each source's next request
	ok   []bool    // head[i] is valid
	next uint64
	err  error
}

// Merge returns the sources merged by arrival. Closed-loop sources (those
// implementing Feedback) are refused: their requests depend on the answers
// to earlier ones, and a merge cannot order what is not yet issued.
func Merge(srcs ...Source) (*Merged, error) {
	if len(srcs) == 0 {
		return nil, errors.New("workload: Merge needs at least one source")
	}
	m := &Merged{srcs: srcs, head: make([]Request, len(srcs)), ok: make([]bool, len(srcs))}
	for i, s := range srcs {
		if s == nil {
			return nil, fmt.Errorf("workload: Merge source %d is nil", i)
		}
		if _, closed := s.(Feedback); closed {
			return nil, fmt.Errorf("workload: Merge source %d is closed-loop (%T): only open-loop sources merge by arrival", i, s)
		}
	}
	for i := range srcs {
		if err := m.fill(i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// fill reads source i's next request.
func (m *Merged) fill(i int) error {
	r, err := m.srcs[i].Next()
	switch {
	case err == io.EOF:
		m.ok[i] = false
		return nil
	case err != nil:
		return fmt.Errorf("workload: merged source %d: %w", i, err)
	}
	if m.ok[i] && r.Arrival < m.head[i].Arrival {
		return fmt.Errorf("workload: merged source %d goes back in time: request %d at %v after one at %v", i, r.ID, r.Arrival, m.head[i].Arrival)
	}
	m.head[i], m.ok[i] = r, true
	return nil
}

// Next yields the earliest request of any source, or io.EOF when every
// source is exhausted. A source's error is returned, naming the source,
// and ends the merge.
func (m *Merged) Next() (Request, error) {
	if m.err != nil {
		return Request{}, m.err
	}
	best := -1
	for i := range m.srcs {
		if m.ok[i] && (best < 0 || m.head[i].Arrival < m.head[best].Arrival) {
			best = i
		}
	}
	if best < 0 {
		return Request{}, io.EOF
	}
	r := m.head[best]
	r.ID = m.next
	m.next++
	if err := m.fill(best); err != nil {
		m.err = err
		m.ok[best] = false
	}
	return r, nil
}
