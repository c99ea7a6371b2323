package engine

// Scheduled is one request the step in flight scheduled: its Ref, the
// tokens it was given this step, whether they are a decode (one token
// after an emitted one, plus any speculative drafts) rather than a prefill
// chunk, and Computed, its tokens in KV before the step (prefix-cache hits
// included).
type Scheduled struct {
	Ref      int32
	Tokens   int
	Computed int
	Decode   bool
}

// Scheduled appends to dst every request the step in flight scheduled, in
// scheduling order (the order of Plan.Batch), and returns it with true. It
// allocates nothing when dst has room and costs nothing unless called.
//
// It returns dst unchanged and false when no step is in flight, or when
// the engine keeps a decode cohort (OmitStreaks with a cost model reading
// decode contexts only through their sum): the cohort's decodes are not
// listed one by one, so the answer would be incomplete.
func (e *Engine) Scheduled(dst []Scheduled) ([]Scheduled, bool) {
	if !e.inFlight || e.co.n > 0 {
		return dst, false
	}
	for _, s := range e.sched {
		dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: s.sched, Computed: s.computed, Decode: s.decoding})
	}
	return dst, true
}
