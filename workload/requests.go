package workload

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Requests is a workload held in memory: requests in non-decreasing
// arrival order, as an open-loop Source yields them. A test, a request
// list built by hand, or a trace read whole (ReadAll) is one; NewSlice
// makes it a Source.
type Requests []Request

// maxListed caps the problems Validate lists: a list that breaks a rule
// usually breaks it many times, and the first few say why.
const maxListed = 10

// Validate reports every problem (the first ten, and how many more) that
// would make the list an invalid open-loop workload, naming the index:
//   - an Arrival < 0, or before the previous request's;
//   - an ID used twice (a driver finds requests by id);
//   - InputTokens or OutputTokens < 0, or 0 without Failed set (trace
//     readers mark such rows Failed);
//   - PrefixHashes without PrefixBlockTokens > 0, PrefixBlockTokens
//     without PrefixHashes, or a Turn < 0.
func (rs Requests) Validate() error {
	var errs []error
	more := 0
	add := func(i int, format string, args ...any) {
		if len(errs) < maxListed {
			errs = append(errs, fmt.Errorf("workload: Requests[%d]"+format, append([]any{i}, args...)...))
		} else {
			more++
		}
	}
	seen := make(map[uint64]int, len(rs))
	for i, r := range rs {
		if r.Arrival < 0 {
			add(i, ".Arrival must be >= 0, got %v", r.Arrival)
		} else if i > 0 && r.Arrival < rs[i-1].Arrival {
			add(i, ".Arrival %v is before Requests[%d].Arrival %v: an open-loop workload is in non-decreasing arrival order", r.Arrival, i-1, rs[i-1].Arrival)
		}
		if j, dup := seen[r.ID]; dup {
			add(i, ".ID %d repeats Requests[%d].ID: ids must be unique", r.ID, j)
		} else {
			seen[r.ID] = i
		}
		for _, p := range requestProblems(r) {
			add(i, "%s", p)
		}
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("workload: and %d more problems", more))
	}
	return errors.Join(errs...)
}

// requestProblems lists what is wrong with one request on its own, each a
// phrase to follow "Requests[i]".
func requestProblems(r Request) []string {
	var out []string
	if r.InputTokens < 0 || r.OutputTokens < 0 {
		out = append(out, fmt.Sprintf(" token counts must be >= 0, got InputTokens %d and OutputTokens %d", r.InputTokens, r.OutputTokens))
	} else if (r.InputTokens == 0 || r.OutputTokens == 0) && !r.Failed {
		out = append(out, fmt.Sprintf(" has InputTokens %d and OutputTokens %d without Failed: a request with 0 of either can only fail", r.InputTokens, r.OutputTokens))
	}
	if len(r.PrefixHashes) > 0 && r.PrefixBlockTokens <= 0 {
		out = append(out, fmt.Sprintf(".PrefixBlockTokens must be > 0 with PrefixHashes, got %d", r.PrefixBlockTokens))
	}
	if len(r.PrefixHashes) == 0 && r.PrefixBlockTokens != 0 {
		out = append(out, fmt.Sprintf(".PrefixBlockTokens is %d without PrefixHashes", r.PrefixBlockTokens))
	}
	if r.Turn < 0 {
		out = append(out, fmt.Sprintf(".Turn must be >= 0, got %d", r.Turn))
	}
	return out
}

// Span is the time from the first request's arrival to the last's (0 for
// fewer than two requests).
func (rs Requests) Span() time.Duration {
	if len(rs) < 2 {
		return 0
	}
	return rs[len(rs)-1].Arrival - rs[0].Arrival
}

// Slice is an open-loop Source over Requests held in memory: Next yields
// them in order, each as it is (PrefixHashes are shared with the list, not
// copied; a consumer must not modify them). Reset rewinds it, so one list
// serves every run of a sweep.
type Slice struct {
	reqs Requests
	next int
}

// NewSlice validates rs (Requests.Validate) and returns a Source yielding
// them.
func NewSlice(rs []Request) (*Slice, error) {
	if err := Requests(rs).Validate(); err != nil {
		return nil, err
	}
	return &Slice{reqs: rs}, nil
}

// Next yields the next request, io.EOF after the last.
func (s *Slice) Next() (Request, error) {
	if s.next >= len(s.reqs) {
		return Request{}, io.EOF
	}
	r := s.reqs[s.next]
	s.next++
	return r, nil
}

// Loop is OpenLoop: the arrivals are fixed.
func (s *Slice) Loop() Loop { return OpenLoop }

// Len is the number of requests in the list.
func (s *Slice) Len() int { return len(s.reqs) }

// Count is the number of requests yielded since the start or Reset.
func (s *Slice) Count() int { return s.next }

// Reset rewinds the source to the first request.
func (s *Slice) Reset() { s.next = 0 }

// Requests returns the list (not a copy).
func (s *Slice) Requests() Requests { return s.reqs }

// String describes the source for a card: "in-memory list of 3 requests
// over 2s".
func (s *Slice) String() string {
	return fmt.Sprintf("in-memory list of %d requests over %v", len(s.reqs), s.reqs.Span())
}

// ReadAll drains an open-loop source into memory, at most limit requests
// (0: no limit; more is an error naming the limit). A closed-loop source
// (one taking Feedback) is refused: its requests depend on answers a
// simulation has yet to give.
func ReadAll(src Source, limit int) (Requests, error) {
	if _, closed := src.(Feedback); closed {
		return nil, fmt.Errorf("workload: ReadAll: %T is closed-loop: its requests wait for answers, which only a simulation gives", src)
	}
	var rs Requests
	for {
		r, err := src.Next()
		if err == io.EOF {
			return rs, nil
		}
		if err != nil {
			return rs, err
		}
		if limit > 0 && len(rs) == limit {
			return rs, fmt.Errorf("workload: ReadAll: the source has more than %d requests", limit)
		}
		rs = append(rs, r)
	}
}
