package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// A scenario is a small run decoded from bytes: an engine with a tight KV
// pool, timeouts, a window, prefix sharing, priorities, and a few dozen
// requests. The differential fuzz target and the property test share it,
// so that a failing property test case can be replayed as a fuzz input.

// byteReader yields the bytes of data, then zeros.
type byteReader struct{ data []byte }

func (b *byteReader) next() int {
	if len(b.data) == 0 {
		return 0
	}
	v := b.data[0]
	b.data = b.data[1:]
	return int(v)
}

// coarseContext prices a step like Frozen plus 1 ms per 256 tokens of
// decode context: its price changes every few steps, so runs of identical
// steps are cut by price as well as by blocks.
func coarseContext(b costmodel.Batch) time.Duration {
	return costmodel.Frozen{}.StepTime(b) + time.Duration(b.DecodeContext()/256)*time.Millisecond
}

// coarse is coarseContext as a model that says so (costmodel.DecodeSum):
// the engine's decode cohort then prices its steps by the contexts' sum.
type coarse struct{}

func (coarse) StepTime(b costmodel.Batch) time.Duration { return coarseContext(b) }
func (coarse) DecodeSum() bool                          { return true }

// decodeScenario turns bytes into a configuration and its requests. Every
// configuration it returns is valid.
func decodeScenario(data []byte) (Config, list) {
	b := &byteReader{data: data}
	maxSeqs := 1 + b.next()%8
	budget := max(maxSeqs, 16+b.next()*4)
	flags := b.next()
	blockSize := []int{16, 4, 8}[b.next()%3]
	eng := engine.Config{
		MaxSeqs:               maxSeqs,
		MaxBatchedTokens:      budget,
		KVBlocks:              4 + b.next(),
		BlockSize:             blockSize,
		DisableChunkedPrefill: flags&1 != 0,
		DisablePrefixCache:    flags&4 != 0,
	}
	if c := b.next() % 4 * 32; c > 0 && c <= budget && !eng.DisableChunkedPrefill {
		eng.ChunkCap = c
	}
	if flags&2 != 0 {
		eng.Policy = engine.Priority{}
	}
	if flags&8 != 0 {
		eng.Watermark = 0.05
	}
	cfg := Config{Engine: eng, KeepTokens: flags&32 != 0}
	if flags&16 != 0 {
		cfg.Model = coarse{}
	}
	if flags&64 != 0 {
		cfg.ErrorRate = 0.1
	}
	cfg.DetectWarmup = flags&128 != 0
	if t := b.next(); t%4 != 0 {
		cfg.Timeout = time.Duration(t) * 40 * time.Millisecond
	}
	if h := b.next(); h%3 != 0 {
		cfg.Warmup = time.Duration(h%5) * 200 * time.Millisecond
		cfg.Horizon = cfg.Warmup + time.Duration(1+h/3)*100*time.Millisecond
		cfg.Drain = time.Duration(h%4) * 700 * time.Millisecond
	}
	n := 1 + b.next()%40
	unit := blockSize * (1 + b.next()%2) // tokens per prefix hash id
	reqs := make(list, 0, n)
	var at time.Duration
	for i := range n {
		gap, in, out, shape := b.next(), b.next(), b.next(), b.next()
		at += time.Duration(gap%32) * 25 * time.Millisecond
		r := workload.Request{ID: uint64(i), Arrival: at, InputTokens: 1 + in*2, OutputTokens: 1 + out%96,
			Priority: shape % 3}
		if g := shape % 5; g > 0 && r.InputTokens >= unit {
			// Requests of one group share a prefix of up to four units,
			// then diverge.
			units := r.InputTokens / unit
			for j := range units {
				h := uint64(g*100 + j)
				if j >= 1+shape/5%4 {
					h = uint64(1000*(i+1) + j)
				}
				r.PrefixHashes = append(r.PrefixHashes, h)
			}
			r.PrefixBlockTokens = unit
		}
		if k := len(reqs) - 1; shape%7 == 6 && k >= 0 && len(reqs[k].PrefixHashes) > 0 {
			// A conversation's next turn: the last request's ids go on
			// over its answer (HashesCoverOutput), and this prompt
			// resends its prompt and answer, so it finds the answer's
			// blocks (or computes them again while the last still
			// decodes: a second copy).
			p := &reqs[k]
			r.InputTokens = p.InputTokens + p.OutputTokens + 1 + in%50
			r.PrefixHashes, r.PrefixBlockTokens = answerIDs(p, i), unit
			for j := len(r.PrefixHashes); j < r.InputTokens/unit; j++ {
				r.PrefixHashes = append(r.PrefixHashes, uint64(1000*(i+1)+j))
			}
		}
		reqs = append(reqs, r)
	}
	// Read last, so that the bytes before keep their meaning.
	if m := b.next(); m%3 == 1 {
		cfg.MaxBacklog = 1 + m%8
	}
	if f := b.next(); f%3 != 0 { // a fleet of 1 to 4, heterogeneous
		routers := []Router{RoundRobin{}, Random{}, LeastLoaded{}, PowerOfTwo{}, PrefixAffinity{BalanceAbs: 1 + f%5}, ConsistentHash{}}
		n := 1 + f%4
		reps := make([]ReplicaConfig, n)
		for i := range reps {
			e := cfg.Engine
			e.KVBlocks += i * (f % 7) * 3
			if i%2 == 1 && e.MaxSeqs > 1 {
				e.MaxSeqs--
			}
			reps[i] = ReplicaConfig{Engine: e, Model: cfg.Model}
			if i == 2 {
				reps[i].Model = costmodel.Frozen{DecodeStep: 30 * time.Millisecond}
			}
		}
		d := b.next()
		cfg.Fleet = Fleet{Replicas: reps, Router: routers[f/4%len(routers)], Frontends: d % 3}
		if d%2 == 1 {
			cfg.Fleet.SignalDelay = time.Duration(d) * 10 * time.Millisecond
		}
		cfg.Engine, cfg.Model = engine.Config{}, nil
	}
	if c := b.next(); c%3 == 1 { // a client-side concurrency cap
		cfg.MaxConcurrency = 1 + c%6
	}
	if c := b.next(); c%4 == 1 { // two classes besides the default
		cfg.Classes = []Class{
			{Name: "chat", SLO: SLO{TTFT: time.Duration(1+c%5) * 100 * time.Millisecond}, Priority: -1},
			{Name: "batch", SLO: SLO{ITL: time.Duration(1+c%7) * 30 * time.Millisecond, TTFT: Unbounded}},
		}
		for i := range reqs {
			reqs[i].Class = []string{"chat", "batch", "", "other"}[(i+c/4)%4]
		}
	}
	if sp := b.next(); sp%4 == 1 { // speculative decoding on the (first) replica
		spec := Speculation{Tokens: 1 + sp%5, Acceptance: float64(sp%11) / 10}
		if sp%3 == 0 {
			spec.AcceptedLengths = make([]float64, spec.Tokens+1)
			spec.AcceptedLengths[sp%len(spec.AcceptedLengths)] = 1
			spec.AcceptedLengths[0] = 0.5
			spec.Acceptance = 0
		}
		if sp%7 == 2 {
			spec.DraftStep = 3 * time.Millisecond
		}
		if len(cfg.Fleet.Replicas) > 0 {
			if e := cfg.Fleet.Replicas[0].Engine; spec.Tokens < e.WithDefaults().MaxBatchedTokens {
				cfg.Fleet.Replicas[0].Speculation = spec
			}
		} else if spec.Tokens < cfg.Engine.WithDefaults().MaxBatchedTokens {
			cfg.Speculation = spec
		}
		if sp%5 == 3 {
			cfg.SLO.ITLSeries = PerToken
		}
	}
	if w := b.next(); w%4 == 1 { // a warm start from one request's prefix
		e := cfg.Engine
		if len(cfg.Fleet.Replicas) > 0 {
			e = cfg.Fleet.Replicas[0].Engine
		}
		for _, r := range reqs {
			if n := len(r.PrefixHashes); n > 0 && n*r.PrefixBlockTokens/e.BlockSize <= e.KVBlocks/2 && !e.DisablePrefixCache {
				cfg.Warm = []workload.Request{r}
				break
			}
		}
	}
	if x := b.next(); x%3 == 1 { // summaries past a tiny exact-sample limit: sketches
		cfg.ExactSamples = 1 + x%7
	}
	if m := b.next(); m%3 == 1 { // a MaxModelLen below the KV capacity: more outputs cut
		limit := 8 + m*3
		for _, w := range cfg.Warm { // a warm-up Add would refuse is refused
			limit = max(limit, w.InputTokens+1)
		}
		cut := func(e *engine.Config) { e.MaxModelLen = min(limit, e.WithDefaults().MaxModelLen) }
		if len(cfg.Fleet.Replicas) > 0 {
			for i := range cfg.Fleet.Replicas {
				cut(&cfg.Fleet.Replicas[i].Engine)
			}
		} else {
			cut(&cfg.Engine)
		}
	}
	if g := b.next(); g%3 == 1 { // a gateway: some of a bucket, a concurrency limit, shedding
		h := b.next()
		if h&1 != 0 {
			cfg.Gateway.Bucket = TokenBucket{MaxTokens: 1 + g%5, TokensPerFill: g / 5 % 3, FillInterval: time.Duration(1+h/8%4) * 50 * time.Millisecond}
		}
		if h&2 != 0 {
			cfg.Gateway.Limit = ConcurrencyLimit{PerReplica: 1 + g%3, Queue: g / 8 % 5, TTL: time.Duration(g/32%4) * 150 * time.Millisecond}
		}
		if h&4 != 0 || h&7 == 0 {
			cfg.Gateway.Shed = Saturation{QueueDepth: h / 32 % 3, KVUtil: float64(h/96%2) * 0.5}
			if !cfg.Gateway.Shed.On() {
				cfg.Gateway.Shed.QueueDepth = 1
			}
		}
	}
	if v := b.next(); v%2 == 1 { // the prefix-aware router reads the caches through another view
		if pa, ok := cfg.Fleet.Router.(PrefixAffinity); ok {
			views := []CacheView{
				ApproxView{MaxTreeSize: 64 * int(1+v%5), EvictionInterval: time.Duration(1+v%3) * 200 * time.Millisecond},
				EventsView{Lag: time.Duration(v%4) * 20 * time.Millisecond, Jitter: time.Duration(v%3) * 7 * time.Millisecond},
				ExactView{},
				TieredView{},
			}
			pa.View = views[int(v/2)%len(views)]
			cfg.Fleet.Router = pa
		}
	}
	if h := b.next(); h%3 == 1 && len(cfg.Fleet.Replicas) > 1 {
		// Replicas of two block sizes, so that a router's view keys a
		// prompt twice (View.prefixKeys). Doubling keeps every bound
		// above: the KV capacity doubles, a cut MaxModelLen stays below
		// it, a warm-up takes fewer blocks.
		for i := 1; i < len(cfg.Fleet.Replicas); i += 2 {
			cfg.Fleet.Replicas[i].Engine.BlockSize *= 2
		}
	}
	if p := b.next(); p%4 == 1 { // a disaggregated fleet: a prefill pool of 1 or 2, a decider, a link
		q := b.next()
		first := ReplicaConfig{Engine: cfg.Engine, Model: cfg.Model}
		if len(cfg.Fleet.Replicas) > 0 {
			first = cfg.Fleet.Replicas[0]
		} else {
			cfg.Fleet.Replicas = []ReplicaConfig{{Engine: cfg.Engine, Model: cfg.Model, Speculation: cfg.Speculation}}
			cfg.Engine, cfg.Model, cfg.Speculation = engine.Config{}, nil, Speculation{}
		}
		first.Speculation = Speculation{}
		pre := Copies(1+int(p/4)%2, first)
		if q%5 == 2 {
			pre[0].Engine.MaxSeqs = 1 // a prefill queue of one prompt at a time
		}
		deciders := []Decider{AlwaysRemote{}, NeverRemote{}, PrefixThreshold{NonCachedTokens: 1 + q%3*16}, nil}
		link := Link{Bandwidth: float64(1+q/16%4) * 2e6, Latency: time.Duration(q/64%3) * 5 * time.Millisecond, Sharing: LinkSharing(q / 4 % 2)}
		if q%7 == 3 {
			link = Link{} // instantaneous
		}
		cfg.Fleet.Prefill = PrefillPool{Replicas: pre, Decider: deciders[int(p/8)%len(deciders)], Link: link,
			KVBytesPerToken: float64(1 + q%3*1000)}
		if p/32%2 == 1 {
			cfg.Fleet.Prefill.Router = LeastLoaded{}
		}
		cfg.Gateway.Limit, cfg.Gateway.Shed = ConcurrencyLimit{}, Saturation{} // not modelled with pools
		cfg.DetectWarmup = false
	}
	if k := b.next(); k%3 != 0 && !cfg.Fleet.Prefill.On() && !eng.DisablePrefixCache {
		// KV tiers below HBM: a host tier, a shared store or both, of 0
		// to 96 blocks, on slow links (loads take steps), FIFO or fair.
		m := b.next()
		link := Link{Bandwidth: float64(1+m%4) * 3e6, Latency: time.Duration(m/4%3) * 3 * time.Millisecond, Sharing: LinkSharing(m / 12 % 2)}
		if m%11 == 5 {
			link = Link{} // instantaneous: a load still waits for the next plan
		}
		if k/3%3 != 1 || k%3 == 2 {
			cfg.Fleet.HostTier = HostTier{Blocks: int(k/9%4) * 32, Link: link, KVBytesPerToken: float64(1 + m%5*500)}
		}
		if k/3%3 != 0 && !mixedBlocks(cfg) {
			cfg.Fleet.SharedStore = SharedStore{Blocks: int(m/24%4) * 32, Link: link, KVBytesPerToken: float64(1 + m%3*2000)}
		}
		cfg.DetectWarmup = false
	}
	if a := b.next(); a%3 == 1 && !cfg.Fleet.Prefill.On() && !cfg.Fleet.HostTier.On() && !cfg.Fleet.SharedStore.On() {
		// Replicas that come and go: a schedule of four steps, repeated,
		// on a controller ticking every 50 to 200 ms, with a cold start
		// and drains of every kind.
		c := b.next()
		if cfg.Fleet.Replicas == nil {
			cfg.Fleet.Replicas = []ReplicaConfig{{Engine: cfg.Engine, Model: cfg.Model, Speculation: cfg.Speculation}}
			cfg.Engine, cfg.Model, cfg.Speculation = engine.Config{}, nil, Speculation{}
		}
		steps := make([]ReplicaStep, 4)
		for i := range steps {
			steps[i] = ReplicaStep{Duration: time.Duration(1+(int(c)>>i)%4) * 150 * time.Millisecond, Replicas: 1 + (int(a)+i*int(c))%4}
		}
		cfg.Fleet.Autoscale = Autoscale{
			Policy:      Schedule{Steps: steps, Repeat: true, Lead: time.Duration(c%3) * 100 * time.Millisecond},
			Min:         1,
			Max:         max(4, len(cfg.Fleet.Replicas)),
			Interval:    time.Duration(1+a/3%4) * 50 * time.Millisecond,
			MetricDelay: time.Duration(c/3%3) * 70 * time.Millisecond,
			ColdStart:   ColdStart{Load: time.Duration(a/12%4) * 60 * time.Millisecond, Jitter: time.Duration(c/9%2) * 45 * time.Millisecond},
			Drain:       Drain{Timeout: time.Duration(a/48%3) * 150 * time.Millisecond, HandBack: c/18%2 == 1},
		}
		if c/36%2 == 1 { // HPA's behaviour, in milliseconds: one replica a period up, a window down
			cfg.Fleet.Autoscale.Behavior = Behavior{
				ScaleUp:   Rules{Policies: []RatePolicy{{Kind: PodsRate, Value: 1, Period: 100 * time.Millisecond}}},
				ScaleDown: Rules{Window: 300 * time.Millisecond},
			}
		}
	}
	return cfg, reqs
}

// mixedBlocks reports whether cfg's replicas have more than one block
// size (a shared store needs one).
func mixedBlocks(cfg Config) bool {
	for _, r := range cfg.Fleet.Replicas {
		if r.Engine.BlockSize != cfg.Fleet.Replicas[0].Engine.BlockSize {
			return true
		}
	}
	return false
}

// recordsSteps reports whether a scenario's runs observe every step (read
// from its last byte, so the bytes before keep their meaning).
func recordsSteps(data []byte) bool {
	return len(data) > 0 && data[len(data)-1]%2 == 1
}

// randomScenario draws a scenario's bytes from a seeded stream.
func randomScenario(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5ce9a410))
	data := make([]byte, 18+4*40)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return data
}

// scenarioRun is what one run of a scenario produced.
type scenarioRun struct {
	text []byte         // every record, in the order the observer saw them, and the summary
	sum  Summary        //
	seen map[uint64]int // records observed per request ID
	recs []Record       // every record, without its tokens
	stop time.Duration  // the instant the run stopped
	// lives are the replicas' lives, in index order (Fleet.Autoscale).
	lives []replicaLife
	// chunkRuns is the runs planned whose steps carry prefill chunks.
	chunkRuns int
	// runReserves is the reservations made inside a run (reserveInRun).
	runReserves int
	// specMoves is the speculative runs accounted (accountSpecRun).
	specMoves int
}

// replicaLife is what a test reads of a replica's life.
type replicaLife struct {
	state                               replicaState
	requested, readyAt, drainAt, goneAt time.Duration
	held                                int
}

// scenarioObserver writes every record, and with steps every step one by
// one, as text.
type scenarioObserver struct {
	buf  *bytes.Buffer
	seen map[uint64]int
	recs *[]Record
}

func (o scenarioObserver) Observe(rec *Record) {
	o.seen[rec.ID]++
	k := *rec
	k.Tokens = nil
	*o.recs = append(*o.recs, k)
	fmt.Fprintf(o.buf, "%+v\n", *rec)
}

// stepScenarioObserver also writes every step, one by one, per replica (a
// replica's steps come in order; a run is delivered when it ends, so
// replicas interleave differently fast and stepwise).
type stepScenarioObserver struct {
	scenarioObserver
	steps map[int]*bytes.Buffer
}

func (o stepScenarioObserver) ObserveStep(s *Step) {
	b := o.steps[s.Replica]
	if b == nil {
		b = new(bytes.Buffer)
		o.steps[s.Replica] = b
	}
	for one := range s.All() {
		c := *one
		c.decode, c.later = nil, nil // All's scratch
		fmt.Fprintf(b, "step %+v\n", c)
	}
}

// checkEngines makes the run check every engine's invariants after every
// plan and step, and hold every call it makes to the engine's batched
// contract (engine.Runner.SetStrict), which panics on a broken rule.
func (r *runner) checkEngines() {
	r.checkEngine = true
	r.checking, r.odd = true, &r.checking // account tests one flag for both (odd)
	for i := range r.reps {
		r.reps[i].run().SetStrict(true)
	}
}

// runScenario runs cfg on a copy of reqs with the engine's invariants
// checked after every step; with steps, every step is written too.
func runScenario(cfg Config, reqs list, steps ...bool) (scenarioRun, error) {
	out, _, err := runScenarioRunner(cfg, reqs, steps...)
	return out, err
}

// runScenarioRunner is runScenario, with the runner it ran.
func runScenarioRunner(cfg Config, reqs list, steps ...bool) (scenarioRun, *runner, error) {
	return runScenarioWith(cfg, reqs, twins{}, steps...)
}

// runScenarioWith is runScenarioRunner with the slow twins tw on.
func runScenarioWith(cfg Config, reqs list, tw twins, steps ...bool) (scenarioRun, *runner, error) {
	src := append(list(nil), reqs...)
	return runSourceScenarioWith(cfg, &src, tw, steps...)
}

// runSourceScenario is runScenarioRunner on any source (one that takes
// Feedback too), which it consumes.
func runSourceScenario(cfg Config, src workload.Source, steps ...bool) (scenarioRun, *runner, error) {
	return runSourceScenarioWith(cfg, src, twins{}, steps...)
}

// runSourceScenarioWith is runSourceScenario with the slow twins tw on.
func runSourceScenarioWith(cfg Config, src workload.Source, tw twins, steps ...bool) (scenarioRun, *runner, error) {
	var buf bytes.Buffer
	seen := map[uint64]int{}
	var recs []Record
	var obs Observer = scenarioObserver{&buf, seen, &recs}
	stepLogs := map[int]*bytes.Buffer{}
	if len(steps) > 0 && steps[0] {
		obs = stepScenarioObserver{scenarioObserver{&buf, seen, &recs}, stepLogs}
	}
	r, err := newRunnerWith(cfg, src, obs, tw)
	if err != nil {
		return scenarioRun{}, nil, err
	}
	r.checkEngines()
	if err := r.loop(); err != nil {
		return scenarioRun{}, nil, err
	}
	sum := r.summary()
	// The summary, and what its pointers point to (printed as pointers
	// they would compare addresses).
	flat := sum
	flat.Disagg, flat.Tiers, flat.Scale = nil, nil, nil
	fmt.Fprintf(&buf, "%+v\n", flat)
	if sum.Disagg != nil {
		fmt.Fprintf(&buf, "disagg %+v\n", *sum.Disagg)
	}
	if sum.Tiers != nil {
		fmt.Fprintf(&buf, "tiers %+v\n", *sum.Tiers)
	}
	if sum.Scale != nil {
		fmt.Fprintf(&buf, "scale %+v\n", *sum.Scale)
	}
	for i := range r.reps {
		if b := stepLogs[i]; b != nil {
			buf.Write(b.Bytes())
		}
	}
	lives := make([]replicaLife, len(r.reps))
	for i := range r.reps {
		rep := &r.reps[i]
		lives[i] = replicaLife{rep.state, rep.requested, rep.readyAt, rep.drainAt, rep.goneAt, rep.held}
	}
	return scenarioRun{text: buf.Bytes(), sum: sum, seen: seen, recs: recs, stop: r.now, lives: lives, chunkRuns: r.chunkRuns, runReserves: r.runReserves, specMoves: r.specMoves}, r, nil
}

// answerIDs extends p's ids over its answer's full units with fresh ids
// (those of request i, the turn after it) and returns them.
func answerIDs(p *workload.Request, i int) []uint64 {
	unit := p.PrefixBlockTokens
	for j := len(p.PrefixHashes); j < (p.InputTokens+p.OutputTokens)/unit; j++ {
		p.PrefixHashes = append(p.PrefixHashes, uint64(1_000_000*(i+1)+j))
	}
	p.HashesCoverOutput = true
	return slices.Clone(p.PrefixHashes[:(p.InputTokens+p.OutputTokens)/unit])
}
