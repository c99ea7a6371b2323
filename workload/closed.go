package workload

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// Clients is a closed-loop workload: a fixed population of Clients, each
// sending a request, waiting for it to end, thinking, and sending the next.
// The offered load is set by the population and the system's own speed,
// not by an arrival rate (Chapter 2's closed loop): use it only when the
// population is itself part of the workload.
//
// Each client draws from its own streams ("client/<i>/input", "/output",
// "/think", "/prefix"), so client i's k-th request has the same lengths
// whatever the system under test does: common random numbers survive the
// feedback.
type Clients struct {
	Seed uint64
	// Clients is the population (> 0).
	Clients int
	// Requests is the total number of requests issued (> 0), or 0 for no
	// limit (then Duration must be set).
	Requests int
	// Duration, when > 0, stops clients from issuing at or after it.
	Duration time.Duration
	// Stagger spreads the first requests: client i starts at
	// i·Stagger/Clients. Zero: all start at instant 0.
	Stagger time.Duration
	// Think is the think time after each answer.
	Think   Think
	Lengths Joint
	Prefix  PrefixReuse
	Class   string
}

// Validate reports every problem with the configuration.
func (c Clients) Validate() error {
	var errs []error
	if c.Clients < 1 {
		errs = append(errs, fmt.Errorf("workload: Clients.Clients must be >= 1, got %d", c.Clients))
	}
	if c.Requests < 0 || c.Duration < 0 || c.Stagger < 0 {
		errs = append(errs, fmt.Errorf("workload: Clients.Requests, Duration and Stagger must be >= 0, got %d, %v, %v", c.Requests, c.Duration, c.Stagger))
	}
	if c.Requests == 0 && c.Duration == 0 {
		errs = append(errs, errors.New("workload: Clients needs Requests or Duration"))
	}
	if c.Lengths == nil {
		errs = append(errs, errors.New("workload: Clients.Lengths is nil"))
	} else {
		errs = append(errs, c.Lengths.Validate())
	}
	errs = append(errs, c.Think.Validate(), c.Prefix.Validate())
	return errors.Join(errs...)
}

func (c Clients) String() string {
	return fmt.Sprintf("closed-loop %d clients, %v; lengths %v; prefixes: %v; requests %d, duration %v, seed %d",
		c.Clients, c.Think, c.Lengths, c.Prefix, c.Requests, c.Duration, c.Seed)
}

// release is a client ready to send at an instant.
type release struct {
	client int
	at     time.Duration
}

// ClientPool yields a Clients workload; it is a Source and takes Feedback.
type ClientPool struct {
	cfg      Clients
	streams  []clientStreams
	ids      *blockIDs
	ready    []release      // FIFO in release order
	inflight map[uint64]int // request id → client
	issued   int
}

type clientStreams struct {
	draws
	think *rand.Rand
}

// NewClients validates cfg and returns its pool of clients.
func NewClients(cfg Clients) (*ClientPool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &ClientPool{cfg: cfg, ids: newBlockIDs(cfg.Prefix), inflight: map[uint64]int{}}
	p.streams = make([]clientStreams, cfg.Clients)
	for i := range p.streams {
		name := fmt.Sprintf("client/%d/", i)
		p.streams[i] = clientStreams{
			draws: draws{NewStream(cfg.Seed, name+"input"), NewStream(cfg.Seed, name+"output"), NewStream(cfg.Seed, name+"prefix")},
			think: NewStream(cfg.Seed, name+"think"),
		}
		p.ready = append(p.ready, release{i, cfg.Stagger * time.Duration(i) / time.Duration(cfg.Clients)})
	}
	return p, nil
}

// Next yields the next request a client is ready to send, ErrWaiting if
// every client is waiting for an answer, io.EOF when done.
func (p *ClientPool) Next() (Request, error) {
	for len(p.ready) > 0 {
		rel := p.ready[0]
		p.ready = p.ready[1:]
		if p.exhausted() || p.cfg.Duration > 0 && rel.at >= p.cfg.Duration {
			continue // this client stops
		}
		id := uint64(p.issued)
		d := p.streams[rel.client].draws
		in, out := p.cfg.Lengths.Sample(d.in, d.out)
		r := newRequest(id, rel.at, in, out, p.ids, d.prefix)
		r.Class = p.cfg.Class
		p.inflight[id] = rel.client
		p.issued++
		return r, nil
	}
	if len(p.inflight) == 0 {
		return Request{}, io.EOF
	}
	return Request{}, ErrWaiting
}

func (p *ClientPool) exhausted() bool { return p.cfg.Requests > 0 && p.issued >= p.cfg.Requests }

// Finished tells the pool that request id ended at instant at (ok or not):
// its client thinks, then becomes ready. Unknown ids are ignored.
func (p *ClientPool) Finished(id uint64, at time.Duration, _ bool) {
	c, found := p.inflight[id]
	if !found {
		return
	}
	delete(p.inflight, id)
	if !p.exhausted() {
		p.ready = append(p.ready, release{c, at + p.cfg.Think.sample(p.streams[c].think)})
	}
}

// Loop is ClosedLoop.
func (p *ClientPool) Loop() Loop { return ClosedLoop }

// Config returns the workload's configuration.
func (p *ClientPool) Config() Clients { return p.cfg }
