package sim

import (
	"iter"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/servesim/servesim/sim/stats"
)

// sample is one latency's values: exact up to a limit, a stats.Sketch
// beyond.
//
// The values are held as the durations they are, and converted to
// milliseconds (ms) only when the summary reads them, sorted: the
// conversion never reverses two values' order (float64 of an integer and
// division by a positive constant, both correctly rounded, are
// non-decreasing), and values it makes equal become the same bits, so the
// milliseconds sorted are exactly the milliseconds of the durations
// sorted, and durations sort twice as fast as floats (stats.SortDurations).
// infMS stands for a latency beyond every bound (+Inf ms).
//
// The exact values are kept in fixed chunks drawn from a pool shared by
// every run of the process, and gathered into one slice of exactly their
// number when the summary reads them: a run's samples then cost that one
// slice, not a slice grown by doubling (about twice the bytes, each value
// copied again at every growth), and a sweep's runs reuse one another's
// chunks. BenchmarkRunAtlas keeps seven such samples of 20,000 values.
//
// The chunk being filled is also held as a slice (cur) whose capacity is
// the room left in it, never past the limit: an add within it is a store,
// inlined into the collector's count, and every other add takes addSlow.
// (The split is worth 1.0 % of RunAtlas's instructions and of
// RunBatch256's, measured 2026-12-04; it stays as one of five splits worth
// 3.9 % together: docs/scale.md, "What the inlining contortions are
// worth".)
type sample struct {
	x      []time.Duration    // the exact values gathered so far (values)
	chunks []*[]time.Duration // the exact values added since, in order; the last is cur's
	cur    []time.Duration    // the last chunk's values (its slice's length is written back by sync)
	n      int                // how many values the chunks before the last hold; sortedN once x holds them all, sorted
	sk     *stats.Sketch
}

// sortedN is a sample's n once x's array holds every exact value,
// sorted, in milliseconds (as float64s: asFloats), and chunks none
// (presort, mergeSorted): the summary's sort and conversion are done. (A
// field of its own grew a replica by 64 bytes, past the 7 KB that
// TestFleetSetupAllocatesEachReplicaOnce holds it to.) Nothing adds to a
// sorted sample: the summary sorts at the end of the run.
const sortedN = -1

// sorted reports whether x's array holds every exact value, sorted, in
// milliseconds (sortedN).
func (s *sample) sorted() bool { return s.n == sortedN }

// sampleChunk is how many values a chunk holds: 32 KiB.
const sampleChunk = 4096

var chunkPool = sync.Pool{New: func() any {
	c := make([]time.Duration, 0, sampleChunk)
	return &c
}}

// infMS is the duration a sample holds for +Inf ms (offered, in summary.go): no
// latency reaches it (a run's instants are below it).
const infMS = time.Duration(math.MaxInt64)

// msOf is a held value in milliseconds.
func msOf(d time.Duration) float64 {
	if d == infMS {
		return math.Inf(1)
	}
	return ms(d)
}

// add adds a value: exactly while the sample holds fewer than limit
// values (the same limit at every call), to the sketch after.
//
// The append is to the field itself, so that where it does not grow (it
// never does here) the compiler writes back the length alone, not the
// pointer with its write-barrier test and the capacity: 7 instructions
// an add where a copy of the slice appended to took 13 (RunAtlas 6,194
// then 6,164 instructions a request, Fleet8LeastLoaded 12,565 then
// 12,541; BenchmarkRegime, one iteration).
func (s *sample) add(v time.Duration, limit int) {
	if len(s.cur) < cap(s.cur) {
		s.cur = append(s.cur, v) // never grows
		return
	}
	s.addSlow(v, limit)
}

// addSlow is add with no room in the chunk being filled: a new chunk, or
// the sketch.
func (s *sample) addSlow(v time.Duration, limit int) {
	if s.sk == nil {
		s.sync()
		if held := len(s.x) + s.n; held < limit {
			c := chunkPool.Get().(*[]time.Duration)
			s.chunks = append(s.chunks, c)
			s.cur = (*c)[:1:min(sampleChunk, limit-held)]
			s.cur[0] = v
			return
		}
		s.sk = summarySketch()
		for _, y := range s.x {
			s.sk.Add(msOf(y))
		}
		s.x = nil
		for _, c := range s.chunks { // in add order
			for _, y := range *c {
				s.sk.Add(msOf(y))
			}
		}
		s.free()
	}
	s.sk.Add(msOf(v))
}

// sync writes the chunk being filled back into its place, and counts it
// among the chunks before the next.
func (s *sample) sync() {
	if len(s.chunks) > 0 && s.cur != nil {
		c := s.chunks[len(s.chunks)-1]
		*c = (*c)[:len(s.cur)] // its length: cur's capacity may be cut short
		s.n += len(s.cur)
		s.cur = nil
	}
}

// free returns the chunks to the pool.
func (s *sample) free() {
	for _, c := range s.chunks {
		*c = (*c)[:0]
		chunkPool.Put(c)
	}
	s.chunks, s.cur, s.n = nil, nil, 0
}

// values gathers the exact values into one slice, in add order (nil when
// sketched, or when there are none): a chunk at a time, not a call a
// value (a closure a value was 3 % of BenchmarkRunAtlas's instructions).
func (s *sample) values() []time.Duration {
	s.sync()
	if s.n > 0 {
		x := make([]time.Duration, len(s.x), len(s.x)+s.n)
		copy(x, s.x)
		for _, c := range s.chunks {
			x = append(x, *c...)
		}
		s.free()
		s.x = x
	}
	return s.x
}

// scratch is a summary's scratch space: stats.SortDurations' buffer, and the
// values of a sample whose Dist alone is kept. It is reused across runs
// (scratchPool): a sweep summarises every run, and the two were a fifth
// of what a BenchmarkRunAtlas run allocated.
type scratch struct{ sort, vals []time.Duration }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// summarise sorts the exact values and returns them in milliseconds with
// their Dist, or nil and the sketch's Dist.
func (s *sample) summarise(m stats.Method, sc *scratch) ([]float64, stats.Dist) {
	if s.sk != nil {
		return nil, s.sk.Dist(m)
	}
	if s.sorted() { // presort or mergeSorted's milliseconds
		y := asFloats(s.x)
		s.x, s.n = nil, 0
		return y, stats.DistOf(y, m)
	}
	x := s.values()
	s.x = nil // its array now holds the milliseconds
	y := sortMS(x, sc)
	return y, stats.DistOf(y, m)
}

// sortMS sorts x and returns its values in milliseconds, in x's array:
// the sort's last pass writes them (stats.SortDurationsMS, whose
// float64(d) / 1e6 is ms(d), and msOf(d) for any d it converts: infMS
// takes slices.Sort), or sortedToMS after it.
func sortMS(x []time.Duration, sc *scratch) []float64 {
	y, buf := stats.SortDurationsMS(x, sc.sort)
	sc.sort = buf
	if y == nil {
		y = sortedToMS(x)
	}
	return y
}

// distOnly is summarise's Dist, its values gathered into the scratch and
// not kept.
func (s *sample) distOnly(m stats.Method, sc *scratch) stats.Dist {
	if s.sk != nil {
		return s.sk.Dist(m)
	}
	if s.sorted() { // presorted: its own array, in milliseconds
		y := asFloats(s.x)
		s.x, s.n = nil, 0
		return stats.DistOf(y, m)
	}
	s.sync()
	x := append(sc.vals[:0], s.x...)
	for _, c := range s.chunks {
		x = append(x, *c...)
	}
	s.free()
	s.x = nil
	d := stats.DistOf(sortMS(x, sc), m)
	sc.vals = x[:0]
	return d
}

// presort sorts the exact values in place and converts them to
// milliseconds (sortMS), before a merge reads them (mergeSorted); the
// summary then reads them as they are.
func (s *sample) presort(sc *scratch) {
	if s.sk != nil || s.sorted() {
		return
	}
	sortMS(s.values(), sc)
	s.n = sortedN
}

// mergeSorted makes s's exact values, sorted and in milliseconds, the
// merge of the parts' presorted ones when the parts hold every value of
// s: a fleet's TTFT,
// TPOT and E2E samples are its replicas' (countShared adds an ok request's
// to its replica's share as count adds them to the fleet's, and a share
// counts no request the fleet does not), so the fleet's sort is a merge
// of theirs (their own summaries sort them anyway: Fleet8LeastLoaded's
// three sorts of 3,200 values cost 150 instructions a request more than
// the merges). The parts holding a subset of s's values, as many as s
// holds makes them the same multiset, and the merge the sort of s's
// values, duration for duration; otherwise (a part or s sketched, more
// than mergeParts parts, fewer values) s stays as it is, for the sort.
// The parts are merged in milliseconds, each converted once by its
// presort, not the fleet's durations after the merge (that conversion
// cost Fleet8LeastLoaded about 45 instructions a request): the
// conversion never reverses two values' order and makes equal values
// the same bits (see sample), so the merge of the parts' milliseconds is
// the milliseconds of the merge of their durations, bit for bit.
// Proved by TestMergedSamplesAreTheSort.
func (s *sample) mergeSorted(parts []*sample, sc *scratch) {
	if s.sk != nil || s.sorted() || len(parts) > mergeParts {
		return
	}
	s.sync()
	n, held := len(s.x)+s.n, 0
	for _, p := range parts {
		if !p.sorted() {
			return
		}
		held += len(p.x)
	}
	if held != n || n == 0 {
		return
	}
	var runs [mergeParts][]float64
	for i, p := range parts {
		runs[i] = asFloats(p.x)
	}
	x := make([]time.Duration, n)
	sc.sort = mergeRuns(asFloats(x), runs[:len(parts)], sc.sort)
	s.free()
	s.x, s.n = x, sortedN
}

// splitSorted is mergeSorted and the parts' presorts at once, when the
// parts hold s's values (as mergeSorted asks) none of them sorted yet,
// each value under 2⁵⁹ ns: it sorts the parts' values together, each
// tagged with its part in its four low bits (stats.SortDurations: keys
// of one value order as their tags, which changes no bit of either
// result), and hands each part its own in order as it writes s's
// milliseconds. It reports whether it did; otherwise nothing changed.
// A fleet's shares are a few hundred values each, which slices.Sort
// sorted at about 160 instructions a value (Fleet8LeastLoaded's 24
// shares, about 530 instructions a request in the slices package); the
// radix sort of the fleet's thousands, tags and all, and the split cost
// about 80. TestSplitSamplesAreTheSort holds it to the sort.
func (s *sample) splitSorted(parts []*sample, sc *scratch) bool {
	if s.sk != nil || s.sorted() || len(parts) > mergeParts {
		return false
	}
	s.sync()
	n, held := len(s.x)+s.n, 0
	for _, p := range parts {
		if p.sk != nil || p.sorted() {
			return false
		}
		p.sync()
		held += len(p.x) + p.n
	}
	if held != n || n == 0 {
		return false
	}
	keys := make([]time.Duration, n)
	if tagParts(keys, parts)>>(63-splitTagBits) != 0 { // negative, or too long to tag
		return false
	}
	sc.sort = stats.SortDurations(keys, sc.sort)
	// Each part's milliseconds in an array of its own, as its presort
	// would leave them (its own gathered values): a Dist's sums (gonum's)
	// add the values in an order that depends on where the array lies.
	var outs [mergeParts][]float64
	var base [mergeParts]unsafe.Pointer
	for i, p := range parts {
		outs[i] = make([]float64, len(p.x)+p.n)
		base[i] = unsafe.Pointer(unsafe.SliceData(outs[i]))
	}
	splitInto(asFloats(keys), keys, &base)
	for i, p := range parts {
		p.free()
		p.x, p.n = asDurations(outs[i]), sortedN
	}
	s.free()
	s.x, s.n = keys, sortedN
	return true
}

// splitInto writes, for each of keys' values in order (sorted, tagged
// by splitSorted), its milliseconds at y's place (keys' array: each key
// is read before its 8 bytes are written) and in the array at base's
// place for its tag, at the next place of that array. Each part's array
// holds exactly its values (splitSorted made it), so a tag's place
// never reaches its array's end: each is written through its base and
// a byte offset, without the part's slice and count, whose loads and
// bounds check took 7 of the loop's 18 instructions a value
// (Regime/Fleet8LeastLoaded 10,546 then 10,530 instructions a request,
// the budget test's count). The offset is a number, not a pointer, that
// would point past the array's end after its last value.
func splitInto(y []float64, keys []time.Duration, base *[mergeParts]unsafe.Pointer) {
	var at [mergeParts]uintptr
	y = y[:len(keys)] // y[j] below without a bounds check
	for j, k := range keys {
		v := ms(k >> splitTagBits)
		i := k & (1<<splitTagBits - 1)
		*(*float64)(unsafe.Add(base[i], at[i])) = v
		at[i] += 8
		y[j] = v
	}
}

// tagParts sets keys to the parts' values, tagged (tagInto), part after
// part, and returns the bits of the values or'ed together.
func tagParts(keys []time.Duration, parts []*sample) (or uint64) {
	k := 0
	for i, p := range parts {
		tag := time.Duration(i)
		or |= tagInto(keys[k:], p.x, tag)
		k += len(p.x)
		for _, c := range p.chunks {
			or |= tagInto(keys[k:], *c, tag)
			k += len(*c)
		}
	}
	return or
}

// tagInto sets dst's first len(src) values to src's, shifted left by
// splitTagBits with tag in the bits freed, and returns the bits of src's
// values or'ed together.
//
// It is not inlined: inlined into tagParts' loops (or splitSorted's),
// its loop kept or and its indexes on the stack, five loads and stores
// of its 13 instructions a value; out of line they stay in registers
// (Regime/Fleet8LeastLoaded, servesim's own 10,328 then 10,304
// instructions a request, the budget test's count).
//
//go:noinline
func tagInto(dst, src []time.Duration, tag time.Duration) (or uint64) {
	dst = dst[:len(src)]
	for j, v := range src {
		or |= uint64(v)
		dst[j] = v<<splitTagBits | tag
	}
	return or
}

// asDurations is x's array as durations (asFloats' inverse).
func asDurations(x []float64) []time.Duration {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*time.Duration)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// splitTagBits is how many low bits of splitSorted's keys name a part:
// mergeParts of them.
const splitTagBits = 4

// mergeParts is the most parts mergeSorted merges: pairwise, a value
// moves once a level (4 levels for 16 parts, about 40 instructions),
// where the radix sort of a summary's sample costs 60 to 80.
const mergeParts = 16

// mergeRuns sets x, as long as the runs together, to the merge of the
// sorted runs (of no NaN), and returns buf, its scratch (of 8-byte
// values, as the sorts' is), grown. It copies the runs into place and
// merges neighbours pairwise, a level at a time.
func mergeRuns(x []float64, runs [][]float64, buf []time.Duration) []time.Duration {
	var ends [mergeParts]int // each run's end in src
	k := 0
	for i, r := range runs {
		k += copy(x[k:], r)
		ends[i] = k
	}
	if cap(buf) < len(x) {
		buf = make([]time.Duration, len(x))
	}
	src, dst := x, asFloats(buf[:len(x)])
	for m := len(runs); m > 1; m = (m + 1) / 2 {
		lo := 0
		for i := 0; i < m; i += 2 {
			hi := ends[i]
			if i+1 < m {
				mid := hi
				hi = ends[i+1]
				merge2(dst[lo:hi], src[lo:mid], src[mid:hi])
			} else {
				copy(dst[lo:hi], src[lo:hi])
			}
			ends[i/2], lo = hi, hi
		}
		src, dst = dst, src
	}
	if len(x) > 0 && &src[0] != &x[0] {
		copy(x, src)
	}
	return buf
}

// merge2 sets dst, as long as a and b together, to the merge of the
// sorted a and b (of no NaN). Its loads and stores are unchecked, each
// index below its slice's length by the loop's test (checked, the merge
// of a value took 28 instructions, where the sort it replaces took about
// 20 a pass). The run whose last value is the smaller is a, so that it
// runs out first, or with b's last left: the loop tests a's index alone
// (b's last, no less than any of a's, is never taken before a's end),
// and where a value of b equals one of a, which of them comes first
// changes no bit of dst.
func merge2(dst, a, b []float64) {
	if len(dst) != len(a)+len(b) {
		panic("sim: merge2's dst is not as long as a and b") // the unchecked stores below would overrun it
	}
	if len(a) == 0 || len(b) == 0 {
		copy(dst[copy(dst, a):], b)
		return
	}
	if b[len(b)-1] < a[len(a)-1] {
		a, b = b, a
	}
	pa, pb, pd := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.SliceData(dst))
	i, j, na := uintptr(0), uintptr(0), uintptr(len(a))
	for { // a's index alone can reach its end: tested after it moves
		x, y := *(*float64)(unsafe.Add(pa, i*8)), *(*float64)(unsafe.Add(pb, j*8))
		if y < x {
			*(*float64)(unsafe.Add(pd, (i+j)*8)) = y
			j++
			continue
		}
		*(*float64)(unsafe.Add(pd, (i+j)*8)) = x
		if i++; i == na {
			break
		}
	}
	copy(dst[na+j:], b[j:])
}

// toMS converts x to milliseconds in place, and returns them in x's array
// (nil for nil): both are 8-byte values without pointers, so the summary
// allocates one array a sample, as when it kept milliseconds.
func toMS(x []time.Duration) []float64 {
	y := asFloats(x)
	y = y[:len(x)] // y[i] below without a bounds check: 2 instructions of 15 a value
	for i, d := range x {
		y[i] = msOf(d) // x[i] is read before y[i], the same 8 bytes, is written
	}
	return y
}

// sortedToMS is toMS for a sorted x: infMS, the largest duration, can
// only end it, so the values before it are converted without a test
// each (toMS's test and the constant it reloads were 6 instructions of 15
// a value: Fleet8LeastLoaded's shares convert 9,600).
// TestMillisecondsOfSortedAreSortedMilliseconds holds it to toMS.
func sortedToMS(x []time.Duration) []float64 {
	n := len(x)
	for n > 0 && x[n-1] == infMS {
		n--
	}
	head := x[:n]
	y := asFloats(head)
	y = y[:len(head)] // y[i] below without a bounds check
	for i, d := range head {
		y[i] = ms(d)
	}
	y = asFloats(x)
	for i := n; i < len(y); i++ {
		y[i] = math.Inf(1)
	}
	return y
}

// asFloats is x's array as float64s (nil for an empty x).
func asFloats(x []time.Duration) []float64 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// clone is a deep copy of s (its chunks gathered first).
func (s *sample) clone() sample {
	if s.sk != nil {
		return sample{sk: s.sk.Clone()}
	}
	return sample{x: slices.Clone(s.values())}
}

// weighted is a sample held as distinct values with counts, as ITLs are:
// thousands of tokens share a handful of step durations, so the summary keeps
// every gap exactly in memory proportional to the distinct values.
//
// Past limit distinct values (a context-priced model makes every steps
// duration its own), the gaps move to a Sketch; limit 0 is no limit.
//
// A sketched sample keeps its moments as exact integer sums (Σn·d and
// Σn·d² in nanoseconds, 128 and 192 bits), not as a running float: a run
// fast-forwarded adds a gap once for many tokens where a run step by step
// adds it once a step, and the mean and the deviation must come out the
// same to the bit either way.
type weighted struct {
	counts *gapCounts // nil until the first gap (a pointer: a replica holds two, TestFleetSetupAllocatesEachReplicaOnce)
	limit  int
	sk     *stats.Sketch
	sum    [2]uint64 // Σ n·d, ns, when sketched (lo, hi)
	sq     [3]uint64 // Σ n·d², ns²

	// The gaps of the two values added last, not yet counted, the latest
	// first: gaps come in runs of one value (a moves steps, the moves of
	// a batch, the requests of a step) that alternate with another (a run
	// of decode steps, then a mixed step), and a map update each cost a
	// twentieth of BenchmarkRunAtlas. The counts are integers, so when
	// they reach the map changes nothing. Readers call settle first.
	pend  [2]time.Duration
	pendN [2]int
	npend int

	// sorted is the distinct values, increasing, and their counts, as
	// counts holds them (sortedRuns found them and nothing was counted
	// since; nil after a count); a fleet's merged sample holds them
	// alone, its counts nil (mergedGaps). A fleet's summary read each
	// replica's table twice, for the fleet's merge and for the replica's
	// own summary, and merged the tables into a table of its own, sorted
	// and read again: Regime/Disagg, whose first gaps (the transfers')
	// are nearly all distinct, spent 12,602 then 12,370 instructions a
	// request (the budget test's count). A pointer: a replica holds two
	// weighted samples (TestFleetSetupAllocatesEachReplicaOnce).
	sorted *sortedCounts
}

// sortedCounts are distinct values, increasing, and their counts: read
// only once made.
type sortedCounts struct {
	keys []time.Duration
	kn   []int
}

// add counts n gaps of d. More gaps of the latest value are the usual
// case, inline at the calls (add's cost is the inliner's budget, 80;
// the rest is addOther): about 2.5 of RunAtlas's 4.2 calls a request,
// 4,914 then 4,907 instructions a request (the budget test's count).
func (w *weighted) add(d time.Duration, n int) {
	if d == w.pend[0] && w.npend > 0 {
		w.pendN[0] += n
		return
	}
	w.addOther(d, n)
}

// addOther is add of a value other than the latest.
func (w *weighted) addOther(d time.Duration, n int) {
	switch {
	case w.npend > 1 && d == w.pend[1]:
		w.pend[0], w.pend[1] = d, w.pend[0]
		w.pendN[0], w.pendN[1] = w.pendN[1]+n, w.pendN[0]
	default:
		if w.npend == 2 {
			w.count(w.pend[1], w.pendN[1])
		}
		w.pend[1], w.pendN[1] = w.pend[0], w.pendN[0]
		w.pend[0], w.pendN[0] = d, n
		w.npend = min(w.npend+1, 2)
	}
}

// totals are how many values w holds and their sum, n·d over its gaps
// (wrapping as a sum of durations added one by one does): its table's,
// or past its limit the sketch's count and the low word of its exact sum,
// Σ n·d over gaps of d ≥ 0, each n > 0 (sketch's).
func (w *weighted) totals() (n int, sum time.Duration) {
	w.settle()
	if w.sk != nil {
		return w.sk.N(), time.Duration(w.sum[0])
	}
	for d, k := range w.gaps() {
		n += k
		sum += time.Duration(k) * d
	}
	return n, sum
}

// settle counts the pending gaps: every reader calls it first.
func (w *weighted) settle() {
	for i := range w.npend {
		w.count(w.pend[i], w.pendN[i])
		w.pendN[i] = 0
	}
	w.npend = 0
}

// count counts n gaps of d in the table, or the sketch past the limit.
//
// A table's gap is counted in place, a new one put where its probe ended:
// one probe, no call (gapCounts.add, which count called before, took
// count's tests and its own again). Speculative steps interleave their
// chunk sizes' gaps (each the step's gap over its tokens), so that the
// two pending values miss most adds (Regime/Speculation: 77,000 of
// 94,000) and count takes them: 34,085 then 33,642 instructions a
// request in BenchmarkRegime/Speculation, KVPressure 10,649 then 10,566,
// RunAtlas 6,234 then 6,230 (the budget test's count).
func (w *weighted) count(d time.Duration, n int) {
	if g := w.counts; g != nil && w.sorted == nil { // not sketched: counts would be nil
		i := g.slot(d)
		if g.keys[i] == d^noGap {
			g.vals[i] += n
			return
		}
		g.put(i, d, n)
		if w.limit > 0 && g.n > w.limit {
			w.toSketch()
		}
		return
	}
	if w.sk != nil {
		w.sketch(d, n)
		return
	}
	if w.counts == nil {
		w.counts = new(gapCounts)
		if o := w.sorted; o != nil { // a merged sample's values
			for i, k := range o.keys {
				w.counts.add(k, o.kn[i])
			}
		}
	}
	w.counts.add(d, n)
	w.sorted = nil
	if w.limit > 0 && w.counts.n > w.limit {
		w.toSketch()
	}
}

// toSketch moves the table's gaps to a sketch.
func (w *weighted) toSketch() {
	w.sk = summarySketch()
	for d, n := range w.counts.all() { // integer sums: any order
		w.sketch(d, n)
	}
	w.counts = nil
}

// gapCounts is a weighted sample's distinct gaps, each with its count
// (0 or more: a gap added is held, whatever its count), in an
// open-addressed table of its own: linear probing from a Fibonacci hash,
// a power-of-two size at most half full. A Go map's
// insert cost about 130 instructions (the runtime's), paid by each gap
// of a value neither pending one holds (Fleet8LeastLoaded: 7,628 a run
// of 3,200 requests, a replica's histogram of about 70 values); the
// table's, about 30. The marginal count a request with the runtime's
// work: Fleet8LeastLoaded 13,607 then 13,444, RunAtlas 6,239 then 6,217.
// Readers take the gaps in no order (all), as they took a map's.
// TestGapCountsIsAMap holds it to a map.
//
// A gap d is held as d^noGap, its sign bit flipped, so that an empty
// place is 0 and a new table is empty as made: filled with noGap, each
// resize's loop over the new table cost Regime/Conversations, whose
// table takes about a new gap a request and so grows all along, 63
// instructions a request more: 10,904 then 10,841 (the budget test).
type gapCounts struct {
	keys  []time.Duration // d^noGap for each gap d held, 0 where empty
	vals  []int
	n     int  // gaps held
	shift uint // 64 − log2(len(keys)): the hash's top bits index the table
}

// noGap is no gap (none is that long negative): gapCounts holds a gap
// d as d^noGap, and 0 (noGap^noGap) where empty.
const noGap = time.Duration(math.MinInt64)

// slot is where d is held in g, or the empty place where it would go.
func (g *gapCounts) slot(d time.Duration) int {
	mask, k := len(g.keys)-1, d^noGap
	i := int((uint64(d) * keyMul) >> (g.shift & 63))
	for g.keys[i] != k && g.keys[i] != 0 {
		i = (i + 1) & mask
	}
	return i
}

// add counts n more gaps of d.
func (g *gapCounts) add(d time.Duration, n int) {
	if g.keys == nil {
		g.resize(64)
	}
	keys, vals := g.keys, g.vals[:len(g.keys)]
	mask, k := len(keys)-1, d^noGap
	i := int((uint64(d)*keyMul)>>(g.shift&63)) & mask
	for {
		switch keys[i] {
		case k:
			vals[i] += n
			return
		case 0:
			g.put(i, d, n)
			return
		}
		i = (i + 1) & mask
	}
}

// put holds n gaps of d in the empty place i, d's (slot), and grows the
// table when it is more than half full.
func (g *gapCounts) put(i int, d time.Duration, n int) {
	g.keys[i], g.vals[i] = d^noGap, n
	if g.n++; 2*g.n > len(g.keys) {
		g.resize(2 * len(g.keys))
	}
}

// len is how many gaps g holds (0 for nil).
func (g *gapCounts) len() int {
	if g == nil {
		return 0
	}
	return g.n
}

// get is d's count (0 if g, which may be nil, does not hold it).
func (g *gapCounts) get(d time.Duration) int {
	if g == nil || g.keys == nil {
		return 0
	}
	if i := g.slot(d); g.keys[i] == d^noGap {
		return g.vals[i]
	}
	return 0
}

// resize moves g's gaps into a table of size places (a power of two).
func (g *gapCounts) resize(size int) {
	keys, vals := g.keys, g.vals
	g.keys, g.vals = make([]time.Duration, size), make([]int, size) // empty: 0 is no gap's place
	g.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for i, k := range keys {
		if k != 0 {
			j := g.slot(k ^ noGap)
			g.keys[j], g.vals[j] = k, vals[i]
		}
	}
}

// all yields g's gaps and their counts, in no order (none for nil).
func (g *gapCounts) all() iter.Seq2[time.Duration, int] {
	return func(yield func(time.Duration, int) bool) {
		if g == nil {
			return
		}
		for i, k := range g.keys {
			if k != 0 && !yield(k^noGap, g.vals[i]) {
				return
			}
		}
	}
}

// sketch adds n gaps of d to the sketchs buckets and the exact sums.
func (w *weighted) sketch(d time.Duration, n int) {
	if n <= 0 {
		return
	}
	w.sk.AddN(ms(d), n) // the mean and deviation are the exact sums
	u, k := uint64(max(d, 0)), uint64(n)
	hi, lo := bits.Mul64(k, u)
	var c uint64
	w.sum[0], c = bits.Add64(w.sum[0], lo, 0)
	w.sum[1] += hi + c
	// n·d² = n·(d² as 128 bits), up to 192 bits.
	dh, dl := bits.Mul64(u, u)
	h1, l1 := bits.Mul64(k, dl)
	h2, l2 := bits.Mul64(k, dh)
	mid, c1 := bits.Add64(h1, l2, 0)
	top := h2 + c1
	w.sq[0], c = bits.Add64(w.sq[0], l1, 0)
	w.sq[1], c = bits.Add64(w.sq[1], mid, c)
	w.sq[2] += top + c
}

// moments are the exact mean and population deviation, ms, of a sketched
// sample.
func (w *weighted) moments() (mean, std float64) {
	words := func(ws ...uint64) *big.Int {
		z := new(big.Int)
		for i := len(ws) - 1; i >= 0; i-- {
			z.Lsh(z, 64).Or(z, new(big.Int).SetUint64(ws[i]))
		}
		return z
	}
	n := big.NewInt(int64(w.sk.N()))
	sum, sq := words(w.sum[:]...), words(w.sq[:]...)
	// n²·variance = n·Σd² − (Σd)², exact; then one rounding each.
	v := new(big.Int).Mul(n, sq)
	v.Sub(v, new(big.Int).Mul(sum, sum))
	nn := new(big.Int).Mul(n, n)
	m, _ := new(big.Rat).SetFrac(sum, n).Float64()
	vr, _ := new(big.Rat).SetFrac(v, nn).Float64()
	return m / 1e6, math.Sqrt(max(vr, 0)) / 1e6
}

// runs returns the distinct values in milliseconds, increasing, with the
// cumulative counts.
func (w *weighted) runs() (vals []float64, cum []int) {
	o := w.sortedRuns()
	keys, kn := o.keys, o.kn
	vals = make([]float64, len(keys))
	cum = make([]int, len(keys))
	total := 0
	for i, d := range keys {
		total += kn[i]
		vals[i] = ms(d)
		cum[i] = total
	}
	return vals, cum
}

// sortedRuns returns the distinct values, increasing, and their counts,
// found from the table once until the next count.
func (w *weighted) sortedRuns() *sortedCounts {
	if w.sorted != nil {
		return w.sorted
	}
	keys := make([]time.Duration, 0, w.counts.len())
	for d := range w.counts.all() {
		keys = append(keys, d)
	}
	stats.SortDurations(keys, nil) // distinct: the order is slices.Sort's
	kn := make([]int, len(keys))
	for i, d := range keys {
		kn[i] = w.counts.get(d)
	}
	w.sorted = &sortedCounts{keys: keys, kn: kn}
	return w.sorted
}

// gaps yields w's distinct gaps and their counts, in no order: its
// table's, or a merged sample's sorted ones.
func (w *weighted) gaps() iter.Seq2[time.Duration, int] {
	if w.counts == nil && w.sorted != nil {
		o := w.sorted
		return func(yield func(time.Duration, int) bool) {
			for i, d := range o.keys {
				if !yield(d, o.kn[i]) {
					return
				}
			}
		}
	}
	return w.counts.all()
}

// mergeSortedCounts merges two lists of distinct values, increasing, and
// their counts, adding the counts of a value in both.
func mergeSortedCounts(x, y *sortedCounts) *sortedCounts {
	a, an, b, bn := x.keys, x.kn, y.keys, y.kn
	keys, kn := make([]time.Duration, 0, len(a)+len(b)), make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			keys, kn = append(keys, a[i]), append(kn, an[i])
			i++
		case b[j] < a[i]:
			keys, kn = append(keys, b[j]), append(kn, bn[j])
			j++
		default:
			keys, kn = append(keys, a[i]), append(kn, an[i]+bn[j])
			i++
			j++
		}
	}
	keys, kn = append(keys, a[i:]...), append(kn, an[i:]...)
	keys, kn = append(keys, b[j:]...), append(kn, bn[j:]...)
	return &sortedCounts{keys: keys, kn: kn}
}

// summarySketch is an empty sketch of the summary's accuracy.
func summarySketch() *stats.Sketch {
	s, _ := stats.NewSketch(stats.SketchAccuracy)
	return s
}

// mergedGaps is the weighted sample of every gap the parts hold, of
// limit: what the one sample would be had each gap been added to it too
// (a fleet's ITLs are its replicas', runner.gapsOf). What a summary reads
// of a weighted sample is a function of its gaps' multiset alone: the map
// of value → count, or, past limit distinct values, the sketch's buckets,
// count and maximum and the exact sums (the sketch's running moments,
// which depend on the order, give way to the exact ones: weightedDist).
// Every value added becomes a key of the map, with a count of 0 or more
// (add's pending gaps all reach it), so the one sample's values are the
// union of the parts', and it is sketched exactly when the union
// outnumbers limit, as it is whenever a part is sketched. Proved by
// TestMergedGapsAreOneSample.
func mergedGaps(limit int, parts []*weighted) weighted {
	w := weighted{limit: limit}
	sketched := false
	for _, o := range parts {
		o.settle()
		sketched = sketched || o.sk != nil
	}
	if !sketched {
		// The parts' sorted values, merged two by two (a replica's
		// summary reads its own after: sortedRuns keeps them).
		runs := make([]*sortedCounts, len(parts))
		for i, o := range parts {
			runs[i] = o.sortedRuns()
		}
		for len(runs) > 1 {
			h := 0
			for i := 0; i < len(runs); i += 2 {
				if i+1 < len(runs) {
					runs[h] = mergeSortedCounts(runs[i], runs[i+1])
				} else {
					runs[h] = runs[i]
				}
				h++
			}
			runs = runs[:h]
		}
		if len(runs) == 0 {
			return w
		}
		if limit == 0 || len(runs[0].keys) <= limit {
			w.sorted = runs[0]
			return w
		}
	}
	w.sk = summarySketch()
	for _, o := range parts {
		if o.sk == nil {
			for d, n := range o.gaps() { // integer sums: any order
				w.sketch(d, n)
			}
			continue
		}
		_ = w.sk.Merge(o.sk) // of one accuracy (summarySketch)
		var c uint64
		w.sum[0], c = bits.Add64(w.sum[0], o.sum[0], 0)
		w.sum[1], _ = bits.Add64(w.sum[1], o.sum[1], c)
		w.sq[0], c = bits.Add64(w.sq[0], o.sq[0], 0)
		w.sq[1], c = bits.Add64(w.sq[1], o.sq[1], c)
		w.sq[2], _ = bits.Add64(w.sq[2], o.sq[2], c)
	}
	return w
}
