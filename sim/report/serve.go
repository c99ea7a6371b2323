package report

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// Backend is what a Serve result records as vLLM's "backend" and
// "endpoint_type".
const Backend = "servesim"

// Meta is what vLLM's result file records about a run that a sim.Summary
// does not know. Every zero value writes null (or omits the key), never a
// made-up figure.
type Meta struct {
	Date        string  // vLLM's "date", e.g. "20261129-081000"; "" omits it (a simulation has no wall clock)
	Label       string  // vLLM's "label"; "" writes null
	ModelID     string  // vLLM's "model_id", e.g. "atlas-70b-tp4"; "" writes null
	RequestRate float64 // nominal offered load, requests/s; 0 writes null
	Burstiness  float64 // gamma shape of the arrival gaps (1 is Poisson); 0 writes null
	// MaxConcurrency is the run's sim.Config.MaxConcurrency, the cap on
	// requests in flight (vLLM's --max-concurrency); 0 writes null, as
	// vLLM does without the flag. When it is set, the client wait
	// (sim.Summary.ClientWait) is written as vLLM's client_queue_time
	// statistics.
	MaxConcurrency int
	// InputTokens is the prompt tokens of measured requests that completed
	// ok (vLLM's total_input_tokens; count them with a Tally). 0 writes
	// null, and then total_token_throughput is null too.
	InputTokens int
	// Window is the run's measurement window (sim.Config.Window); nil
	// writes only its length.
	Window *sim.Window
}

// Tally is a sim.Observer that counts what a sim.Summary does not keep:
// the prompt tokens of measured requests that completed ok. The zero value
// is ready to use.
type Tally struct {
	InputTokens int // prompt tokens of measured requests that completed ok
}

// Observe counts r.
func (t *Tally) Observe(r *sim.Record) {
	if r.Measured && r.Status == sim.StatusOK {
		t.InputTokens += r.Input
	}
}

// Serve is a run's summary in the shape of the result file of vLLM's
// `vllm bench serve --save-result` (without --save-detailed: the
// per-request lists are the JSONL and CSV events), followed by servesim's
// additions. See the package doc for each key and where servesim differs.
type Serve struct {
	Summary *sim.Summary
	Meta    Meta
}

// MarshalJSON writes the keys in vLLM's order, then servesim's.
func (s Serve) MarshalJSON() ([]byte, error) {
	if s.Summary == nil {
		return nil, errors.New("report: Serve.Summary is nil")
	}
	var o object
	s.vllm(&o)
	s.additions(&o)
	return o.MarshalJSON()
}

// WriteServe writes sum as one line of JSON, as vLLM writes a result file
// (and appends to one under --append-result).
func WriteServe(w io.Writer, sum *sim.Summary, m Meta) error {
	b, err := json.Marshal(Serve{Summary: sum, Meta: m})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (s Serve) vllm(o *object) {
	sum, m := s.Summary, s.Meta
	if m.Date != "" {
		o.add("date", m.Date)
	}
	o.add("endpoint_type", Backend)
	o.add("backend", Backend)
	o.add("label", orNull(m.Label))
	o.add("model_id", orNull(m.ModelID))
	o.add("tokenizer_id", orNull(m.ModelID))
	o.add("num_prompts", sum.Offered)
	o.add("request_rate", positive(m.RequestRate))
	o.add("burstiness", positive(m.Burstiness))
	o.add("max_concurrency", positive(float64(m.MaxConcurrency)))
	dur := sum.Window.Seconds()
	completed := sum.Count(sim.StatusOK)
	o.add("duration", dur)
	o.add("completed", completed)
	o.add("failed", sum.Offered-completed)
	o.add("total_input_tokens", positive(float64(m.InputTokens)))
	o.add("total_output_tokens", sum.Tokens)
	o.add("request_throughput", sum.RequestThroughput)
	o.add("request_goodput", sum.Goodput)
	o.add("output_throughput", sum.OutputThroughput)
	total := math.NaN() // unknown without the prompt tokens
	if m.InputTokens > 0 && dur > 0 {
		total = float64(m.InputTokens+sum.Tokens) / dur
	}
	o.add("total_token_throughput", Num(total))
	addDist(o, "ttft", sum.TTFT)
	addDist(o, "tpot", sum.TPOT)
	addDist(o, "itl", sum.ITL)
	addDist(o, "e2el", sum.E2E)
	if m.MaxConcurrency > 0 {
		addDist(o, "client_queue_time", sum.ClientWait)
	}
}

// additions are servesim's keys: what goodput is measured against and
// where the misses went.
func (s Serve) additions(o *object) {
	sum := s.Summary
	o.add("offered", sum.Offered)
	o.add("good", sum.Good)
	o.add("attainment", Num(sum.Attainment))
	var st object
	for i := range sim.StatusUnfinished + 1 {
		st.add(i.String(), sum.Count(i))
	}
	if gw := sum.Misses.Gateway; gw > 0 { // a gateway's statuses, when it ended some
		for i := sim.StatusThrottled; i.Gateway(); i++ {
			st.add(i.String(), sum.Count(i))
		}
	}
	o.add("status", st)
	o.add("length_capped", sum.LengthCapped)
	o.add("misses", misses(sum.Misses))
	o.add("miss_causes", misses(sum.Causes))
	o.add("preemptions", sum.Preempt)
	addDist(o, "queue_delay", sum.QueueDelay)
	addDist(o, "worst_itl", sum.WorstITL)
	o.add("percentile_method", sum.Method.String())
	if sum.Sketched() {
		// Past sim.Config.ExactSamples the percentiles come from a
		// sketch: say within what.
		o.add("percentile_relative_error", sum.MaxRelErr())
	}
	o.add("slo", slo(sum.SLO))
	o.add("window", window(sum.Window, s.Meta.Window))
}

// addDist writes a Dist under vLLM's names: mean_ttft_ms and so on, with
// the percentiles vLLM writes under --metric-percentiles 90,95,99.
func addDist(o *object, name string, d stats.Dist) {
	for _, f := range []struct {
		stat string
		v    float64
	}{{"mean", d.Mean}, {"median", d.Median}, {"std", d.Std}, {"p90", d.P90}, {"p95", d.P95}, {"p99", d.P99}} {
		o.add(f.stat+"_"+name+"_ms", Num(f.v))
	}
}

func misses(m sim.Misses) object {
	o := object{{"not_ok", m.NotOK}, {"ttft", m.TTFT}, {"itl", m.ITL}, {"tpot", m.TPOT}, {"e2el", m.E2E}}
	if m.Gateway > 0 { // written only when a gateway ended some
		o = append(object{{"gateway", m.Gateway}}, o...)
	}
	return o
}

// slo writes each bound in ms; an unbounded one is null.
func slo(s sim.SLO) object {
	ms := func(d time.Duration) Num {
		if d == sim.Unbounded {
			return Num(math.Inf(1))
		}
		return Num(float64(d) / 1e6)
	}
	return object{{"ttft_ms", ms(s.TTFT)}, {"itl_ms", ms(s.ITL)}, {"tpot_ms", ms(s.TPOT)}, {"e2el_ms", ms(s.E2E)}}
}

func window(length time.Duration, w *sim.Window) object {
	o := object{{"length_s", length.Seconds()}}
	if w != nil {
		o.add("warmup_s", w.Warmup.Seconds())
		o.add("warmup_requests", w.WarmupRequests)
		o.add("horizon_s", positive(w.Horizon.Seconds()))
	}
	return o
}

// positive is x, or null when x is not positive (not recorded).
func positive(x float64) Num {
	if x > 0 {
		return Num(x)
	}
	return Num(math.NaN())
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
