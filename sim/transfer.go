package sim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// MinLinkBandwidth is the smallest bounded Link.Bandwidth, in bytes per
// second: a kilobyte per second. A transfer of MaxTransferBytes then takes
// 10⁹ s (about 32 years), within MaxDuration, so that no landing instant
// of a validated link overflows time.Duration.
const MinLinkBandwidth = 1e3

// MaxKVBytesPerToken bounds every KVBytesPerToken (PrefillPool,
// HostTier, SharedStore): a GiB of KV a token, some two thousand times
// the largest model's (Llama 3.1 405B: about 0.5 MB a token over every
// rank). A transfer's bytes, the tokens × this, then stay within int64
// for any prompt below 2³³ tokens.
const MaxKVBytesPerToken = 1 << 30

// MaxTransferBytes is the largest transfer, in bytes (a terabyte), whose
// time Validate guarantees to fit in MaxDuration; a larger one lands at
// the end of time (its instant saturates) rather than overflowing.
const MaxTransferBytes = 1_000_000_000_000

// Link is the path a prefill pool's KV takes to a decode pool. Zero value:
// instantaneous (no latency, unbounded bandwidth): a transfer lands at the
// instant it starts.
//
// A transfer's time is Latency and then its byte phase: the byte phase
// begins at start + Latency and moves the transfer's bytes at the link's
// bandwidth, shared with the other transfers in their byte phase as
// Sharing says. Latency (connection set-up, the first byte's flight,
// completion notice) never occupies the bandwidth, so any number of
// transfers can be in their latency phase at once. A transfer lands when
// its last byte has moved, rounded up to the nanosecond of the clock.
//
// Which real connector behaves which way (vLLM at commit
// 28be48fa944d8c58aeffd1ab1b56e27828c6b268, under
// vllm/distributed/kv_transfer/kv_connector/v1/):
//   - NIXL (nixl/worker.py): the decode side pulls. start_load_kv posts,
//     for each request whose handshake is done, a non-blocking RDMA READ
//     (_read_blocks: make_prepped_xfer("READ", …), then transfer), and
//     polls every transfer's state each step (_pop_done_transfers,
//     check_xfer_state). The reads of all requests are in flight at once
//     over UCX and share the NIC: LinkFair. The first read from a new
//     prefill engine waits for a handshake (_background_nixl_handshake),
//     a one-off cost not in Latency.
//   - P2pNcclConnector (p2p/p2p_nccl_engine.py), send_type PUT_ASYNC (the
//     default): send_tensor appends each (request, layer) tensor to one
//     send_queue per engine, which one thread (send_async → send_sync)
//     drains one tensor at a time with ncclSend on one CUDA stream,
//     synchronising after each: LinkFIFO. Its unit is a layer, not a
//     request, so the requests of one prefill batch interleave layer by
//     layer and finish nearly together (fair among themselves), while
//     batches queue behind each other (FIFO).
//   - MooncakeConnector (mooncake/mooncake_connector.py): the prefill
//     side pushes, each request's blocks in one
//     batch_transfer_sync_write on a pool of num_workers sender threads
//     (10 by default): up to ten requests share the NIC at once
//     (LinkFair), more wait in the sender queue.
//
// In the papers: DistServe (Zhong et al., OSDI 2024) pulls the KV from
// the prefill instance's memory when the decode instance is ready for it,
// and places the prefill and decode instances of a model stage on one
// node so that the transfer runs over NVLink (a large Bandwidth, a small
// Latency); Splitwise (Patel et al., ISCA 2024) ships the KV over
// InfiniBand layer by layer while the prompt is still being computed,
// hiding most of it behind the prefill. This link begins a transfer when
// the prefill has ended, so it does not model that overlap: a smaller
// effective Latency and a larger Bandwidth stand for it.
type Link struct {
	// Bandwidth in bytes per second; 0 means unbounded (a transfer takes
	// Latency only). At least MinLinkBandwidth when set. As in
	// costmodel.Disaggregated.LinkBandwidth, it is one accelerator's
	// path, and a transfer's bytes are the per-accelerator KV bytes per
	// token × the prompt: each tensor-parallel rank moves its own shard,
	// all at once.
	Bandwidth float64
	// Latency is each transfer's fixed time (setup, first byte), not
	// occupying the link's bandwidth; at most MaxDuration.
	Latency time.Duration
	// Sharing says how transfers in flight share the bandwidth: LinkFIFO
	// (the zero value: one at a time, in start order, each at full
	// bandwidth) or LinkFair (processor sharing: n transfers in their
	// byte phase each get Bandwidth/n). It makes no difference when the
	// bandwidth is unbounded.
	Sharing LinkSharing
}

// LinkSharing is how the transfers in their byte phase share a Link's
// bandwidth.
type LinkSharing uint8

const (
	// LinkFIFO serves the byte phases one at a time, in start order, each
	// at the full bandwidth (a queue in front of the link).
	LinkFIFO LinkSharing = iota
	// LinkFair shares the bandwidth equally among the transfers in their
	// byte phase (processor sharing): a transfer joining or leaving moves
	// every other's landing instant.
	LinkFair
)

// String is "fifo" or "fair".
func (s LinkSharing) String() string {
	switch s {
	case LinkFIFO:
		return "fifo"
	case LinkFair:
		return "fair"
	}
	return "LinkSharing(" + strconv.Itoa(int(s)) + ")"
}

// Validate refuses a link no run can use, naming the field.
func (l Link) Validate() error { return l.validate("Link") }

func (l Link) validate(field string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+field+"."+format, a...)) }
	switch b := l.Bandwidth; {
	case math.IsNaN(b) || math.IsInf(b, 0):
		bad("Bandwidth must be a finite number of bytes per second (0 means unbounded), got %v", b)
	case b < 0:
		bad("Bandwidth must be >= 0 bytes per second (0 means unbounded), got %v", b)
	case b > 0 && b < MinLinkBandwidth:
		bad("Bandwidth must be 0 (unbounded) or >= MinLinkBandwidth (%v bytes/s, so that a terabyte's transfer fits in MaxDuration), got %v", float64(MinLinkBandwidth), b)
	}
	if l.Latency < 0 {
		bad("Latency must be >= 0, got %v", l.Latency)
	}
	if l.Latency > MaxDuration {
		bad("Latency must be <= MaxDuration (%v), got %v", MaxDuration, l.Latency)
	}
	if l.Sharing > LinkFair {
		bad("Sharing must be LinkFIFO (0) or LinkFair (1), got %d", uint8(l.Sharing))
	}
	return errors.Join(errs...)
}

// String is e.g. "50 GB/s, 20µs, fifo" (decimal units), "unbounded, 20µs"
// without a bandwidth, and "instant" for the zero value.
func (l Link) String() string {
	if l.Bandwidth == 0 {
		if l.Latency == 0 {
			return "instant"
		}
		return "unbounded, " + l.Latency.String()
	}
	return formatBandwidth(l.Bandwidth) + ", " + l.Latency.String() + ", " + l.Sharing.String()
}

func formatBandwidth(b float64) string {
	for _, u := range [...]struct {
		v    float64
		name string
	}{{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}} {
		if b >= u.v {
			return strconv.FormatFloat(b/u.v, 'g', 4, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(b, 'g', 4, 64) + " B/s"
}

// Time is how long a transfer of bytes takes on an idle link: Latency +
// ⌈bytes / Bandwidth⌉ to the nanosecond (Latency alone when the
// bandwidth is unbounded), saturating rather than overflowing.
func (l Link) Time(bytes int64) time.Duration {
	if l.Bandwidth == 0 || bytes <= 0 {
		return l.Latency
	}
	return satAdd(l.Latency, newPace(l.Bandwidth).ceilNs(uint64(bytes)))
}

// landsAtOnce reports whether a transfer over the link may land at the
// instant it starts, kvBytes the bytes of a token's KV: with no latency,
// when the bandwidth is unbounded (the zero value), or when the least a
// transfer moves, one token's KV (an engine.Reservation's Tokens are at
// least 1), takes at most a nanosecond at the full bandwidth. A
// transfer of more than that ends after the nanosecond it starts in,
// whatever the sharing and its rounding; a shorter one may not (a
// fair-shared one of under a picosecond lands at once, ceilGuard: 2,000
// tokens of Atlas's 80 KiB over 10²¹ bytes a second), and this does not
// try to tell which. The nanosecond's margin, a thousand times
// landingGuard, costs nothing on a real link: an Atlas token's KV moves
// in a nanosecond only above 8·10¹³ bytes a second (82 TB/s).
func (l Link) landsAtOnce(kvBytes float64) bool {
	if l.Latency > 0 {
		return false
	}
	if l.Bandwidth == 0 {
		return true
	}
	least := math.Ceil(kvBytes) // as startTransfers rounds a transfer's bytes, of one token
	return least/(l.Bandwidth/1e9) <= 1
}

// pace is a bounded bandwidth B = m·2^e bytes per second, m odd, so that
// the time of c bytes, ⌈c·10⁹/B⌉ ns, is computed exactly in integers.
type pace struct {
	m   uint64
	e   int
	bpn float64 // B/10⁹: bytes per nanosecond
}

func newPace(b float64) pace {
	frac, exp := math.Frexp(b) // b = frac·2^exp, frac in [½, 1)
	m, e := uint64(math.Ldexp(frac, 53)), exp-53
	tz := bits.TrailingZeros64(m)
	return pace{m: m >> tz, e: e + tz, bpn: b / 1e9}
}

// ceilNs is ⌈c·10⁹/B⌉ nanoseconds, exactly, saturating at the largest
// time.Duration (for a validated link, B ≥ MinLinkBandwidth, it never
// saturates below MaxTransferBytes).
func (p pace) ceilNs(c uint64) time.Duration {
	if c == 0 {
		return 0
	}
	hi, lo := bits.Mul64(c, 1e9)
	if p.e >= 0 { // ⌈N/(m·2^e)⌉ = ⌈⌈N/2^e⌉/m⌉
		hi, lo = shrCeil(hi, lo, uint(p.e))
		return divCeil(hi, lo, p.m)
	}
	// N·2^k/m with N = q·m + r: q·2^k + ⌈r·2^k/m⌉, and r·2^k < 2^(53+k).
	k := uint(-p.e)
	if k > 62 || hi/p.m != 0 {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi%p.m, lo, p.m)
	if q>>(63-k) != 0 {
		return math.MaxInt64
	}
	return satAdd(time.Duration(q<<k), divCeil(r>>(64-k), r<<k, p.m))
}

// shrCeil is ⌈(hi·2⁶⁴ + lo) / 2^s⌉.
func shrCeil(hi, lo uint64, s uint) (uint64, uint64) {
	var lost bool
	switch {
	case s == 0:
		return hi, lo
	case s >= 128:
		return 0, 1 // the number is positive
	case s >= 64:
		lost = lo != 0 || hi&(1<<(s-64)-1) != 0
		hi, lo = 0, hi>>(s-64)
	default:
		lost = lo&(1<<s-1) != 0
		hi, lo = hi>>s, lo>>s|hi<<(64-s)
	}
	if lost {
		var carry uint64
		lo, carry = bits.Add64(lo, 1, 0)
		hi += carry
	}
	return hi, lo
}

// divCeil is ⌈(hi·2⁶⁴ + lo) / m⌉, saturating at the largest time.Duration.
func divCeil(hi, lo, m uint64) time.Duration {
	if hi >= m {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, m)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 || q == 0 && r != 0 {
		return math.MaxInt64
	}
	return time.Duration(q)
}

// satAdd is a + b for b ≥ 0, saturating at the largest time.Duration.
func satAdd(a, b time.Duration) time.Duration {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// landingGuard is how far past a whole nanosecond a fair-shared
// transfer's computed end may fall and still land on it: a picosecond,
// above float64's rounding of the remaining bytes for transfers of up to
// about a minute (about 10⁻¹⁶ of a transfer's time per event) and far
// below the clock's nanosecond, so that an end that is exactly whole in
// the model (3 MB at 3 bytes/ns with thirds of a byte in between) is not
// pushed a nanosecond later by rounding. FIFO needs no guard: its
// instants are exact integers.
const landingGuard = 1e-3

// ceilGuard is ⌈x − landingGuard⌉ ns for x ≥ 0 (0 for x ≤ 0), saturating.
func ceilGuard(x float64) time.Duration {
	if !(x > landingGuard) {
		return 0
	}
	if x >= 0x1p63 {
		return math.MaxInt64
	}
	return time.Duration(math.Ceil(x - landingGuard))
}

// transfers is the state of one link's transfers, which the runner drives
// from its event loop: start a transfer, ask when the next one lands,
// collect the landed, cancel one whose requester left. One goroutine, no
// randomness, no allocation per transfer once its slices have grown: the
// same calls give the same instants. The state changes only at the
// transfers' own events (a byte phase beginning, a landing, a
// cancellation), never because it was asked at some instant in between,
// so that how often the runner looks at the link changes nothing. A
// runner's misuse (its clock going back in start or cancel, negative
// bytes) panics; no user input reaches these calls.
//
// Arithmetic. Under FIFO a busy period (the link never idle) begins at an
// integer instant t0 and a transfer's end is t0 + ⌈C·10⁹/B⌉ ns, C the
// bytes of the period through it, computed exactly in 128-bit integers:
// no drift however long the period. Under LinkFair each transfer in its
// byte phase keeps its remaining bytes as a float64 at the last event's
// instant, all decreased by the same share at each event (so their order
// never changes and each one's rounding is relative to its own bytes, not
// to the run's length); the instant the smallest runs out is computed
// from it and rounded up (within landingGuard), and the share released at
// the exact end goes to the others from there (work-conserving), even
// when the landing rounds later. FIFO's landing instants are the exact
// model's, rounded up; LinkFair's are within a nanosecond of them
// (float64's error is relative, about 10⁻¹⁵ of a transfer's time, so
// this holds for transfers of up to hours). TestLinkAgainstExactSimulation
// and FuzzTransfers hold both to an exact simulation in big.Rat.
type transfers struct {
	fair    bool // LinkFair with a bounded bandwidth
	instant bool // unbounded bandwidth: a transfer lands when its byte phase begins
	lat     time.Duration
	pace    pace
	opens   time.Duration // the window [opens, closes) integrated over
	closes  time.Duration
	cur     time.Duration // the latest instant the state was brought to
	seq     uint64        // starts so far: start order

	// q is, under FIFO (and with unbounded bandwidth), every transfer in
	// flight in start order from qh, the head first; under LinkFair, the
	// transfers in their latency phase.
	q  []flight
	qh int
	// act is, under LinkFair, the transfers in their byte phase by
	// ascending remaining bytes (rem at t0), then start order.
	act []flight
	// t0: under FIFO, the start of the head's busy period; under
	// LinkFair, the instant of the last event.
	t0 time.Duration
	// FIFO: bytes of the head's busy period through the head and before
	// it; headAt, the head's landing instant.
	c, cPrev uint64
	headAt   time.Duration
	busyFrom time.Duration // LinkFair: the current busy period's start

	landed []landing // landed, not yet collected, by (at, seq)

	// solo: under LinkFair, the one transfer in flight started on an
	// idle link (nothing in either phase, nothing landed uncollected)
	// and is still in its latency phase: it lands at soloAt, its byte
	// phase x = soloX ns long at the whole bandwidth, unless a start, a
	// cancel or a step to an instant inside its byte phase comes first
	// (they turn solo off, and the plain state, which solo leaves as it
	// is, goes on). next reads soloAt and step lands it at once (landSolo)
	// rather than through nextFair's, join's and depart's arithmetic,
	// which give the same instant: a disaggregated fleet's links are
	// mostly idle. plain turns it off (the twin, TestLinkSoloIsPlain).
	solo   bool
	plain  bool
	soloAt time.Duration
	soloX  float64

	moved     uint64     // bytes of the transfers that landed
	partial   float64    // bytes moved by cancelled transfers
	edgeSeen  [2]bool    // opens, closes reached
	edgeMoved [2]float64 // bytes moved by then (bounded bandwidth)
	instIn    uint64     // unbounded bandwidth: bytes that landed inside the window
	busyNs    int64      // busy time inside the window, whole nanoseconds
	busyFrac  float64    // and its fraction of a nanosecond, in [0, 1)
}

type flight struct {
	id    int32
	bytes int64
	phase time.Duration // start + Latency: its byte phase may begin
	seq   uint64
	rem   float64 // LinkFair: bytes left at t0
}

type landing struct {
	at    time.Duration
	seq   uint64
	id    int32
	bytes int64
}

// newTransfers is the idle link l, integrating over the window [opens,
// closes) (closes may be Unbounded). l must be valid.
func newTransfers(l Link, opens, closes time.Duration) transfers {
	t := transfers{lat: l.Latency, opens: opens, closes: closes}
	if l.Bandwidth == 0 {
		t.instant = true
	} else {
		t.pace = newPace(l.Bandwidth)
		t.fair = l.Sharing == LinkFair
	}
	return t
}

// start begins a transfer of bytes (≥ 0) at now; now never goes back.
// Its ids must be unique among the transfers in flight.
func (t *transfers) start(now time.Duration, id int32, bytes int64) {
	if bytes < 0 {
		panic(fmt.Sprintf("sim: transfer %d of %d bytes", id, bytes))
	}
	t.advance(now)
	phase := satAdd(now, t.lat)
	t.q = append(t.q, flight{id: id, bytes: bytes, phase: phase, seq: t.seq})
	t.seq++
	if !t.fair && len(t.q)-t.qh == 1 {
		t.freshHead(phase)
	}
	if phase <= now {
		// A transfer due at once (no latency) begins, or lands, now.
		// Later, stepping to now changes nothing: advance left no
		// event at or before now, and the new one (and a FIFO head it
		// became, which lands at its phase or later) is after it.
		t.step(now)
	}
	t.solo = false // a second transfer in flight ends it
	if t.fair && !t.plain && phase > now && len(t.q)-t.qh == 1 && len(t.act) == 0 && len(t.landed) == 0 {
		// Alone: its byte phase begins at phase with t0 = phase and
		// rem = bytes (join), and ends x = rem·1/bpn ns later (stepFair,
		// nextFair; rem·1 is rem).
		x := float64(bytes) / t.pace.bpn
		t.solo, t.soloX, t.soloAt = true, x, satAdd(phase, ceilGuard(x))
	}
}

// next is the earliest instant a transfer in flight lands, were nothing
// started or cancelled before it; false when none is in flight. It may be
// the current instant (a transfer that landed and was not collected).
func (t *transfers) next() (at time.Duration, ok bool) {
	if len(t.landed) > 0 {
		return t.landed[0].at, true
	}
	if t.solo {
		return t.soloAt, true
	}
	if t.fair {
		return t.nextFair()
	}
	if t.qh < len(t.q) {
		return t.headAt, true
	}
	return 0, false
}

// land appends to out the ids of the transfers that landed at or before
// now, in landing order (ties: start order), and forgets them. Unlike
// start and cancel it takes a now before the link's latest instant (an
// instant next reported after a start or a cancel at a later one).
func (t *transfers) land(now time.Duration, out []int32) []int32 {
	if t.solo && now >= t.soloAt && now >= t.cur && (t.edgeSeen[0] || now < t.opens) && (t.edgeSeen[1] || now < t.closes) {
		// The solo transfer lands, as mostly, and no window edge is
		// passed on the way: advance's step is landSolo, which leaves
		// it the one landing, taken at once here rather than listed and
		// taken by the loop below (Regime/Disagg, one landing a request).
		id := t.soloOff()
		t.cur = now
		return append(out, id)
	}
	if now >= t.cur {
		t.advance(now)
	}
	k := 0
	for k < len(t.landed) && t.landed[k].at <= now {
		out = append(out, t.landed[k].id)
		k++
	}
	if k == len(t.landed) { // all landed, as mostly: no copy to call
		t.landed = t.landed[:0]
	} else {
		t.landed = t.landed[:copy(t.landed, t.landed[k:])]
	}
	return out
}

// cancel ends the transfer id at now, its requester having left: what it
// moved so far counts, the rest is never moved, and the others go on
// without it (earlier, if they waited for it or shared with it). It
// returns the bytes the transfer moved: all of them if it had landed and
// was not collected (it is then not reported), 0 in its latency phase or
// for an id not in flight.
func (t *transfers) cancel(now time.Duration, id int32) (moved float64) {
	t.advance(now)
	t.solo = false // remove may take it away
	moved = t.remove(now, id)
	t.step(now) // a transfer it held back may land now
	return moved
}

func (t *transfers) remove(now time.Duration, id int32) (moved float64) {
	for i, l := range t.landed {
		if l.id == id {
			t.landed = append(t.landed[:i], t.landed[i+1:]...)
			return float64(l.bytes)
		}
	}
	for i := t.qh; i < len(t.q); i++ {
		if t.q[i].id != id {
			continue
		}
		if t.fair || i > t.qh { // latency phase, or waiting its turn
			t.q = append(t.q[:i], t.q[i+1:]...)
			return 0
		}
		h := t.q[i]
		start := t.t0
		if !t.instant && t.t0 <= now { // its busy period has begun
			moved = clamp(float64(float64(now-t.t0)*t.pace.bpn)-float64(t.cPrev), 0, float64(h.bytes))
			t.partial += moved
			t.addBusy(t.t0, now, 0)
			start = now
		}
		t.popHead()
		if t.qh < len(t.q) {
			t.freshHead(max(start, t.q[t.qh].phase))
		}
		return moved
	}
	for i := range t.act {
		if t.act[i].id != id {
			continue
		}
		t.shareUntil(now)
		f := t.act[i]
		moved = clamp(float64(f.bytes)-f.rem, 0, float64(f.bytes))
		t.partial += moved
		t.act = append(t.act[:i], t.act[i+1:]...)
		if len(t.act) == 0 {
			t.addBusy(t.busyFrom, now, 0)
		}
		return moved
	}
	return 0
}

// inFlight is the number of transfers started and neither landed nor
// cancelled, as of the latest instant the link was brought to.
func (t *transfers) inFlight() int { return len(t.q) - t.qh + len(t.act) }

// bytesIn is the bytes moved inside the window, up to the latest instant
// the link was brought to (by start, land or cancel): a transfer
// straddling an edge counts the part it moved inside. With unbounded
// bandwidth a transfer's bytes move at its landing instant, counted if
// that instant is inside.
func (t *transfers) bytesIn() float64 {
	if t.instant {
		return float64(t.instIn)
	}
	if !t.edgeSeen[0] {
		return 0
	}
	hi := t.edgeMoved[1]
	if !t.edgeSeen[1] {
		hi = t.movedAt(t.cur)
	}
	return hi - t.edgeMoved[0]
}

// busyIn is the time inside the window, up to the latest instant the link
// was brought to, with at least one transfer in its byte phase, to the
// nearest nanosecond. The link moves Bandwidth bytes per second whenever
// it is busy (both disciplines are work-conserving), so bytesIn =
// Bandwidth × busyIn; 0 with unbounded bandwidth.
func (t *transfers) busyIn() time.Duration {
	ns, frac := t.busyNs, t.busyFrac
	from, busy := t.t0, !t.instant && t.qh < len(t.q) && t.t0 <= t.cur
	if t.fair {
		from, busy = t.busyFrom, len(t.act) > 0
	}
	if busy {
		if lo, hi := max(from, t.opens), min(t.cur, t.closes); hi > lo {
			ns += int64(hi - lo)
		}
	}
	if frac >= 0.5 {
		ns++
	}
	return time.Duration(ns)
}

// advance brings the state to now, taking the window's edges on the way.
func (t *transfers) advance(now time.Duration) {
	if now < t.cur {
		panic(fmt.Sprintf("sim: the link's clock went back from %v to %v", t.cur, now))
	}
	// The window's edges, opening first, each written out: a loop over
	// [2]time.Duration{t.opens, t.closes} built the array at every call,
	// 54 instructions of a disaggregated fleet's 2 calls a request
	// (cachegrind, BenchmarkRegime/Disagg).
	if !t.edgeSeen[0] && t.opens <= now {
		t.passEdge(0, t.opens)
	}
	if !t.edgeSeen[1] && t.closes <= now {
		t.passEdge(1, t.closes)
	}
	// With nothing in flight step finds nothing to do: the start of a
	// transfer on an idle link, as mostly in a disaggregated fleet
	// (Regime/Disagg 10,847 -> 10,816 instructions a request, servesim's
	// own, the budget test).
	if t.qh < len(t.q) || len(t.act) > 0 {
		t.step(now)
	}
	t.cur = now
}

// passEdge handles every event up to the window's edge i, at e, and
// notes the bytes moved by then.
func (t *transfers) passEdge(i int, e time.Duration) {
	t.step(e)
	t.edgeSeen[i] = true
	if !t.instant {
		t.edgeMoved[i] = t.movedAt(e)
	}
}

// step handles every event at or before limit, in time order.
func (t *transfers) step(limit time.Duration) {
	if t.fair {
		if t.solo {
			if limit >= t.soloAt {
				t.landSolo()
				return // nothing else is in flight
			}
			if limit < t.q[t.qh].phase {
				return // still in its latency phase, as stepFair finds it
			}
			t.solo = false // its byte phase begins: stepFair's join
		}
		t.stepFair(limit)
		return
	}
	for t.qh < len(t.q) && t.headAt <= limit {
		h, at := t.q[t.qh], t.headAt
		t.moved += uint64(h.bytes)
		if t.instant && t.opens <= at && at < t.closes {
			t.instIn += uint64(h.bytes)
		}
		t.addLanding(at, h)
		t.popHead()
		if t.qh == len(t.q) {
			t.endBusy()
			break
		}
		if nh := t.q[t.qh]; !t.instant && nh.phase < at {
			// It was ready before the head's exact end (an integer
			// before ⌈end⌉ is before end): the busy period goes on.
			t.cPrev = t.c
			t.c += uint64(nh.bytes)
			t.headAt = satAdd(t.t0, t.pace.ceilNs(t.c))
			continue
		}
		t.endBusy()
		t.freshHead(t.q[t.qh].phase)
	}
}

// freshHead makes the head of q begin a busy period of its own at from.
func (t *transfers) freshHead(from time.Duration) {
	t.t0, t.cPrev, t.c = from, 0, uint64(t.q[t.qh].bytes)
	if t.instant {
		t.headAt = from
		return
	}
	t.headAt = satAdd(from, t.pace.ceilNs(t.c))
}

// endBusy closes a FIFO busy period at its exact end, t0 + c/B.
func (t *transfers) endBusy() {
	if !t.instant {
		t.addBusy(t.t0, t.t0, float64(t.c)/t.pace.bpn)
	}
	t.c, t.cPrev = 0, 0
}

func (t *transfers) popHead() {
	t.qh++
	switch {
	case t.qh == len(t.q):
		t.q, t.qh = t.q[:0], 0
	case t.qh >= 32 && 2*t.qh >= len(t.q):
		t.q = t.q[:copy(t.q, t.q[t.qh:])]
		t.qh = 0
	}
}

// stepFair handles LinkFair's events up to limit: a departure first when
// it is due no later than the next byte phase begins (a departure at ⌈d⌉
// ≤ p has d ≤ p; a p < ⌈d⌉ is before d).
func (t *transfers) stepFair(limit time.Duration) {
	for {
		pending := t.qh < len(t.q)
		if n := len(t.act); n > 0 {
			x := t.act[0].rem * float64(n) / t.pace.bpn
			d := satAdd(t.t0, ceilGuard(x))
			if d <= limit && (!pending || d <= t.q[t.qh].phase) {
				t.depart(d, x)
				continue
			}
		}
		if pending && t.q[t.qh].phase <= limit {
			t.join()
			continue
		}
		return
	}
}

// landSolo is stepFair's join of the solo transfer at its byte phase
// and its departure at soloAt, alone on the link: the state they leave.
func (t *transfers) landSolo() {
	f := t.q[t.qh]
	t.soloOff()
	t.addLanding(t.soloAt, f)
}

// soloOff is landSolo but for the landing it lists: the state it leaves
// otherwise, and the id of the transfer that landed (its flight read in
// place, not copied out: land wants its id alone).
func (t *transfers) soloOff() int32 {
	f := &t.q[t.qh]
	id := f.id
	t.busyFrom = f.phase
	t.moved += uint64(f.bytes)
	t.addBusy(f.phase, f.phase, t.soloX)
	t.popHead()
	t.solo = false
	t.t0 = t.soloAt
	return id
}

// depart lands the transfers with the least remaining bytes, whose exact
// end is x ns after t0 (x < 0 when it fell before t0, between two events
// of one instant), at d = t0 + ⌈x⌉; the others' remaining bytes move to
// d: the share each had until the exact end, and from there the larger
// share without the departed.
func (t *transfers) depart(d time.Duration, x float64) {
	r := t.act[0].rem
	k := 0
	for k < len(t.act) && t.act[k].rem == r {
		f := t.act[k]
		t.moved += uint64(f.bytes)
		t.addLanding(d, f)
		k++
	}
	if k == len(t.act) { // all departed, as mostly: no copy to call
		t.act = t.act[:0]
	} else {
		t.act = t.act[:copy(t.act, t.act[k:])]
	}
	n := len(t.act)
	if n == 0 {
		t.addBusy(t.busyFrom, t.t0, x)
		t.t0 = d
		return
	}
	s := r + float64(float64(d-t.t0)-x)*t.pace.bpn/float64(n)
	for i := range t.act {
		t.act[i].rem -= s
	}
	t.t0 = d
}

// join begins the byte phase of the first transfer in its latency phase.
func (t *transfers) join() {
	f := t.q[t.qh]
	t.popHead()
	if len(t.act) == 0 {
		t.busyFrom = f.phase
	}
	t.shareUntil(f.phase)
	f.rem = float64(f.bytes)
	i := len(t.act)
	for i > 0 && t.act[i-1].rem > f.rem {
		i--
	}
	if i == len(t.act) { // the most bytes left: it goes last, as it mostly does
		t.act = append(t.act, f)
		return
	}
	t.act = append(t.act, flight{})
	copy(t.act[i+1:], t.act[i:])
	t.act[i] = f
}

// shareUntil moves LinkFair's origin to now, no transfer leaving before.
func (t *transfers) shareUntil(now time.Duration) {
	if n := len(t.act); n > 0 {
		delta := float64(now-t.t0) * t.pace.bpn / float64(n)
		for i := range t.act {
			t.act[i].rem -= delta
		}
	}
	t.t0 = now
}

// nextFair is next under LinkFair: the first departure, after the byte
// phases that begin before it, with the arithmetic step and depart use,
// without changing the state.
func (t *transfers) nextFair() (time.Duration, bool) {
	n, t0 := len(t.act), t.t0
	var least float64
	if n > 0 {
		least = t.act[0].rem
	}
	for k := t.qh; k < len(t.q); k++ {
		f := &t.q[k] // not a copy of the flight: a pending transfer or two, at every call
		if n > 0 {
			if d := satAdd(t0, ceilGuard(least*float64(n)/t.pace.bpn)); d <= f.phase {
				return d, true
			}
			delta := float64(f.phase-t0) * t.pace.bpn / float64(n)
			least -= delta
		}
		t0 = f.phase
		if b := float64(f.bytes); n == 0 || b < least {
			least = b
		}
		n++
	}
	if n == 0 {
		return 0, false
	}
	return satAdd(t0, ceilGuard(least*float64(n)/t.pace.bpn)), true
}

// addLanding records f landed at at, keeping landed by (at, seq).
func (t *transfers) addLanding(at time.Duration, f flight) {
	t.landed = append(t.landed, landing{at: at, seq: f.seq, id: f.id, bytes: f.bytes})
	for i := len(t.landed) - 1; i > 0; i-- {
		a, b := t.landed[i-1], t.landed[i]
		if a.at < b.at || a.at == b.at && a.seq < b.seq {
			break
		}
		t.landed[i-1], t.landed[i] = b, a
	}
}

// movedAt is the bytes moved by e, the state being at e (every event
// before e handled, none after).
func (t *transfers) movedAt(e time.Duration) float64 {
	m := float64(t.moved) + t.partial
	if t.fair {
		if n := len(t.act); n > 0 {
			delta := float64(e-t.t0) * t.pace.bpn / float64(n)
			for _, f := range t.act {
				m += clamp(float64(f.bytes)-(f.rem-delta), 0, float64(f.bytes))
			}
		}
		return m
	}
	if t.qh < len(t.q) && t.t0 <= e {
		h := t.q[t.qh]
		m += clamp(float64(float64(e-t.t0)*t.pace.bpn)-float64(t.cPrev), 0, float64(h.bytes))
	}
	return m
}

// addBusy adds the busy interval [from, base + off), off ns past the
// integer base, clipped to the window.
func (t *transfers) addBusy(from, base time.Duration, off float64) {
	lo := max(from, t.opens)
	if lo >= t.closes {
		return
	}
	var ns int64
	var frac float64
	if off >= float64(t.closes-base) {
		ns = int64(t.closes - lo)
	} else {
		whole := math.Floor(off)
		ns, frac = int64(base-lo)+int64(whole), off-whole
	}
	if ns < 0 {
		return
	}
	t.busyNs += ns
	if t.busyFrac += frac; t.busyFrac >= 1 {
		t.busyFrac--
		t.busyNs++
	}
}

func clamp(x, lo, hi float64) float64 { return min(max(x, lo), hi) }
