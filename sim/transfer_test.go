package sim

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkOp is a start (of bytes) or a cancel of transfer id at an instant.
type linkOp struct {
	at     time.Duration
	cancel bool
	id     int32
	bytes  int64
}

// linkRun is what a link did with a stream of ops, driven as the runner
// drives it: each op at its instant, each landing at the instant next
// reports (landings before ops at one instant).
type linkRun struct {
	at        []time.Duration // landing instant per id; -1 if it never landed
	moved     []float64       // bytes moved per id (cancel's answer, or all)
	cancelled []bool          // cancel found it in flight
	order     []int32         // ids in the order land reported them
	nexts     []time.Duration // every instant next reported (-1: none in flight)
	solos     int             // landings the solo path made (landSolo)
	tr        transfers
}

func driveLink(t testing.TB, l Link, opens, closes time.Duration, ops []linkOp, ids int) *linkRun {
	t.Helper()
	return driveTransfers(t, newTransfers(l, opens, closes), ops, ids)
}

// driveTransfers is driveLink on the link tr.
func driveTransfers(t testing.TB, tr transfers, ops []linkOp, ids int) *linkRun {
	t.Helper()
	r := &linkRun{at: make([]time.Duration, ids), moved: make([]float64, ids), cancelled: make([]bool, ids),
		tr: tr}
	bytes := make([]int64, ids)
	for i := range r.at {
		r.at[i] = -1
	}
	var out []int32
	for i := 0; ; {
		at, ok := r.tr.next()
		if ok {
			r.nexts = append(r.nexts, at)
		} else {
			r.nexts = append(r.nexts, -1)
		}
		if i < len(ops) && (!ok || ops[i].at < at) {
			op := ops[i]
			i++
			if !op.cancel {
				bytes[op.id] = op.bytes
				r.tr.start(op.at, op.id, op.bytes)
				continue
			}
			gone := r.at[op.id] >= 0 || r.cancelled[op.id]
			m := r.tr.cancel(op.at, op.id)
			if gone {
				require.Zero(t, m, "cancel of %d, landed and collected or cancelled", op.id)
				continue
			}
			r.moved[op.id] = m
			r.cancelled[op.id] = true
			continue
		}
		if !ok {
			break
		}
		if r.tr.solo && at == r.tr.soloAt {
			r.solos++
		}
		out = r.tr.land(at, out[:0])
		require.NotEmpty(t, out, "next said a transfer lands at %v", at)
		for _, id := range out {
			require.Equal(t, time.Duration(-1), r.at[id], "transfer %d landed twice", id)
			r.at[id] = at
			r.moved[id] = float64(bytes[id])
			r.order = append(r.order, id)
		}
	}
	require.Zero(t, r.tr.inFlight())
	return r
}

// equalStarts is n transfers of b bytes started together at at.
func equalStarts(n int, at time.Duration, b int64) []linkOp {
	ops := make([]linkOp, n)
	for i := range ops {
		ops[i] = linkOp{at: at, id: int32(i), bytes: b}
	}
	return ops
}

// roundUp is ⌈a/b⌉ for a ≥ 0, b > 0.
func roundUp(a, b int64) time.Duration { return time.Duration((a + b - 1) / b) }

// Under FIFO, n equal transfers started together land one byte phase
// apart: at start + L + ⌈k·b/B⌉, k = 1..n. At 3 GB/s a megabyte takes
// 333,333⅓ ns: the instants are the exact multiples rounded up (the third
// lands at exactly 1 ms past its byte phase), not a sum of rounded
// phases, which would drift a nanosecond a transfer.
func TestLinkFIFOEqualTransfers(t *testing.T) {
	const n = 5
	for _, c := range []struct {
		bw float64
		b  int64
	}{{50e9, 1e6}, {3e9, 1e6}, {50e9, atlasPrompt}} {
		bw, b := c.bw, c.b
		l := Link{Bandwidth: bw, Latency: 20 * time.Microsecond}
		r := driveLink(t, l, 0, Unbounded, equalStarts(n, time.Millisecond, b), n)
		for k := 1; k <= n; k++ {
			want := time.Millisecond + l.Latency + roundUp(int64(k)*b*1e9, int64(bw))
			assert.Equal(t, want, r.at[k-1], "%v, transfer %d", l, k)
		}
		assert.Equal(t, []int32{0, 1, 2, 3, 4}, r.order)
		assert.Equal(t, float64(n*b), r.tr.bytesIn())
		if b == atlasPrompt { // ExampleLink: 3.2768 ms apart
			assert.Equal(t, 3276800*time.Nanosecond, r.at[1]-r.at[0])
		}
		// Busy from the first byte phase to the last byte, n·b/B.
		assert.InDelta(t, float64(n*b)/bw*1e9, float64(r.tr.busyIn()), 0.5)
	}
}

// Under fair sharing, n equal transfers started together each get B/n
// and all land at start + L + ⌈n·b/B⌉, in start order.
func TestLinkFairEqualTransfers(t *testing.T) {
	const n = 4
	for _, c := range []struct {
		bw float64
		b  int64
	}{{50e9, 1e6}, {3e9, 1e6}, {50e9, atlasPrompt}} {
		bw, b := c.bw, c.b
		l := Link{Bandwidth: bw, Latency: 20 * time.Microsecond, Sharing: LinkFair}
		r := driveLink(t, l, 0, Unbounded, equalStarts(n, time.Millisecond, b), n)
		want := time.Millisecond + l.Latency + roundUp(n*b*1e9, int64(bw))
		for k := range n {
			assert.Equal(t, want, r.at[k], "%v, transfer %d", l, k)
		}
		assert.Equal(t, []int32{0, 1, 2, 3}, r.order)
		assert.Equal(t, float64(n*b), r.tr.bytesIn())
		if b == atlasPrompt { // ExampleLink: all at 20 µs + 13.1072 ms
			assert.Equal(t, time.Millisecond+20*time.Microsecond+13107200, r.at[0])
		}
	}
}

// atlasPrompt is the KV of a 2,000-token Atlas prompt, 80 KiB a token.
const atlasPrompt = 2000 * costmodel.AtlasKVBytesPerToken

// A short transfer joining a long one, at 1 byte/ns. Fair: the long one
// (3 MB at 0) has 2 MB left when the short one (1 MB) joins at 1 ms; at
// half a byte per ns each, the short one lands 2 ms later, at 3 ms, and
// the long one moves its last MB alone, landing at 4 ms. FIFO: the long
// one lands at 3 ms and the short one, waiting for it, at 4 ms.
// Processor sharing lets the short one out first; FIFO makes it wait.
func TestLinkShortJoinsLong(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 3_000_000}, {at: time.Millisecond, id: 1, bytes: 1_000_000}}
	fair := driveLink(t, Link{Bandwidth: 1e9, Sharing: LinkFair}, 0, Unbounded, ops, 2)
	assert.Equal(t, []time.Duration{4 * time.Millisecond, 3 * time.Millisecond}, fair.at)
	assert.Equal(t, []int32{1, 0}, fair.order)
	fifo := driveLink(t, Link{Bandwidth: 1e9}, 0, Unbounded, ops, 2)
	assert.Equal(t, []time.Duration{3 * time.Millisecond, 4 * time.Millisecond}, fifo.at)
	// Both are work-conserving: 4 MB at 1 byte/ns keep the link busy 4 ms.
	for _, r := range []*linkRun{fair, fifo} {
		assert.Equal(t, 4e6, r.tr.bytesIn())
		assert.Equal(t, 4*time.Millisecond, r.tr.busyIn())
	}
}

// Three transfers of 1, 2 and 4 MB share 3 bytes/ns from 0. Each moves 1
// byte/ns until the first lands at exactly 1 ms; then 1.5 bytes/ns each,
// so the second's last MB takes 666,666⅔ ns, landing at ⌈1,666,666⅔⌉;
// the third, with 2 MB left then, moves them alone in 666,666⅔ ns more.
// Its end, 2,333,333⅓ ns, is the link's work, 7 MB / 3 bytes/ns, since
// the second's share passes to it at the exact end, not at the rounded
// landing.
func TestLinkFairShares(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 1e6}, {at: 0, id: 1, bytes: 2e6}, {at: 0, id: 2, bytes: 4e6}}
	r := driveLink(t, Link{Bandwidth: 3e9, Sharing: LinkFair}, 0, Unbounded, ops, 3)
	assert.Equal(t, []time.Duration{1_000_000, 1_666_667, 2_333_334}, r.at)
	assert.Equal(t, 7e6, r.tr.bytesIn())
	assert.Equal(t, time.Duration(2_333_333), r.tr.busyIn()) // 2,333,333⅓ to the nearest ns
}

// Work conservation survives shares float64 cannot hold. At 3 bytes/ns,
// fair: A (1 MB at 0) moves alone until B (1 MB) joins at 333,333 with 1
// byte left, which takes ⅔ ns at 1.5 bytes/ns: A lands at ⌈333,333⅔⌉. B,
// alone from there, has moved 1 + 28 bytes when C (1 MB) joins at
// 333,343; its last 999,971 bytes take 666,647⅓ ns at 1.5 bytes/ns, so it
// lands at ⌈999,990⅓⌉. C then has 29 bytes left, 9⅔ ns alone: it ends at
// exactly 1 ms, 3 MB at 3 bytes/ns from 0, the link busy throughout. Its
// computed end is a hair past 1 ms (thirds of a byte, rounded), and
// landingGuard keeps it on the whole nanosecond.
func TestLinkFairLandsOnWholeNanosecond(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 1e6}, {at: 333_333, id: 1, bytes: 1e6}, {at: 333_343, id: 2, bytes: 1e6}}
	r := driveLink(t, Link{Bandwidth: 3e9, Sharing: LinkFair}, 0, Unbounded, ops, 3)
	assert.Equal(t, []time.Duration{333_334, 999_991, time.Millisecond}, r.at)
	assert.Equal(t, time.Millisecond, r.tr.busyIn())
	assert.Equal(t, 3e6, r.tr.bytesIn())
}

// Latency never occupies the bandwidth: under FIFO a transfer started
// during another's latency waits only for its byte phase. At 1 byte/ns
// and 5 ms of latency, 1 MB at 0 moves in [5, 6) ms; 1 MB at 0.5 ms is
// ready at 5.5 ms, waits, and moves in [6, 7) ms; 1 MB at 3 ms is ready
// at 8 ms, the link idle since 7 ms, and lands at 9 ms.
func TestLinkLatencyIsNotBandwidth(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 1e6}, {at: 500 * time.Microsecond, id: 1, bytes: 1e6}, {at: 3 * time.Millisecond, id: 2, bytes: 1e6}}
	r := driveLink(t, Link{Bandwidth: 1e9, Latency: 5 * time.Millisecond}, 0, Unbounded, ops, 3)
	assert.Equal(t, []time.Duration{6 * time.Millisecond, 7 * time.Millisecond, 9 * time.Millisecond}, r.at)
	assert.Equal(t, 3*time.Millisecond, r.tr.busyIn())
	assert.Equal(t, 3e6, r.tr.bytesIn())
}

// FIFO's busy periods split at the exact end, not at the rounded
// landing. At 3 bytes/ns with 1 µs of latency, a megabyte started at 0
// moves in [1,000, 334,333⅓) ns and lands at 334,334. A second one
// started at 333,333 is ready at 334,333, before that end: it follows
// without a gap and lands at 1,000 + ⌈666,666⅔⌉ = 667,667. One started at
// 333,334 is ready at 334,334, after the end: it finds the link idle and
// lands a whole phase later, at 334,334 + ⌈333,333⅓⌉ = 667,668.
func TestLinkFIFOBusyPeriodEdge(t *testing.T) {
	for _, c := range []struct{ start, want time.Duration }{{333_333, 667_667}, {333_334, 667_668}} {
		ops := []linkOp{{at: 0, id: 0, bytes: 1e6}, {at: c.start, id: 1, bytes: 1e6}}
		r := driveLink(t, Link{Bandwidth: 3e9, Latency: time.Microsecond}, 0, Unbounded, ops, 2)
		assert.Equal(t, []time.Duration{334_334, c.want}, r.at, "second started at %d", c.start)
		assert.Equal(t, time.Duration(666_667), r.tr.busyIn(), "2 MB at 3 bytes/ns, 666,666⅔ ns")
	}
}

// Unbounded bandwidth: a transfer lands at start + Latency whatever its
// bytes and whatever else is in flight; the zero Link lands it at its
// start, which next reports at once.
func TestLinkUnboundedAndInstant(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 1 << 40}, {at: time.Millisecond, id: 1, bytes: 5}, {at: time.Millisecond, id: 2, bytes: 0}}
	for _, s := range []LinkSharing{LinkFIFO, LinkFair} {
		r := driveLink(t, Link{Latency: 20 * time.Microsecond, Sharing: s}, 0, Unbounded, ops, 3)
		assert.Equal(t, []time.Duration{20 * time.Microsecond, 1020 * time.Microsecond, 1020 * time.Microsecond}, r.at)
		assert.Equal(t, float64(1<<40+5), r.tr.bytesIn())
		assert.Zero(t, r.tr.busyIn())
	}
	tr := newTransfers(Link{}, 0, Unbounded)
	tr.start(7*time.Second, 9, 1<<30)
	at, ok := tr.next()
	require.True(t, ok)
	assert.Equal(t, 7*time.Second, at)
	assert.Equal(t, []int32{9}, tr.land(at, nil))
	_, ok = tr.next()
	assert.False(t, ok)
}

// A cancelled transfer keeps what it moved and frees the link for the
// rest. Two transfers start at 0 on 1 byte/ns, A of 2 MB and B of 1 MB;
// A's requester leaves at 0.5 ms. FIFO: A moved 0.5 MB; B moves from
// then, landing at 1.5 ms. Fair: A and B moved 0.25 MB each; B moves its
// last 0.75 MB alone, landing at 1.25 ms. Either way the link moved what
// it was busy for.
func TestLinkCancel(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 2e6}, {at: 0, id: 1, bytes: 1e6}, {at: 500 * time.Microsecond, cancel: true, id: 0}}
	for _, c := range []struct {
		s      LinkSharing
		movedA float64
		landB  time.Duration
	}{{LinkFIFO, 5e5, 1500 * time.Microsecond}, {LinkFair, 2.5e5, 1250 * time.Microsecond}} {
		r := driveLink(t, Link{Bandwidth: 1e9, Sharing: c.s}, 0, Unbounded, ops, 2)
		assert.True(t, r.cancelled[0], "%v", c.s)
		assert.Equal(t, c.movedA, r.moved[0], "%v", c.s)
		assert.Equal(t, []time.Duration{-1, c.landB}, r.at, "%v", c.s)
		assert.Equal(t, c.movedA+1e6, r.tr.bytesIn(), "%v", c.s)
		assert.Equal(t, c.landB, r.tr.busyIn(), "%v", c.s)
	}
	// Cancelled in its latency phase, or behind the FIFO head: nothing
	// moved, and the others are as if it never started.
	ops = []linkOp{{at: 0, id: 0, bytes: 1e6}, {at: 0, id: 1, bytes: 1e6}, {at: 0, id: 2, bytes: 1e6},
		{at: 500 * time.Microsecond, cancel: true, id: 1}}
	r := driveLink(t, Link{Bandwidth: 1e9}, 0, Unbounded, ops, 3)
	assert.Equal(t, []time.Duration{time.Millisecond, -1, 2 * time.Millisecond}, r.at)
	assert.Zero(t, r.moved[1])
	r = driveLink(t, Link{Bandwidth: 1e9, Latency: time.Millisecond, Sharing: LinkFair}, 0, Unbounded, ops, 3)
	assert.Equal(t, []time.Duration{3 * time.Millisecond, -1, 3 * time.Millisecond}, r.at)
	assert.Zero(t, r.moved[1])
	// A landing not yet collected is all moved; cancel takes it back.
	tr := newTransfers(Link{Bandwidth: 1e9}, 0, Unbounded)
	tr.start(0, 4, 1000)
	assert.Equal(t, 1000.0, tr.cancel(5*time.Microsecond, 4))
	_, ok := tr.next()
	assert.False(t, ok)
	assert.Equal(t, 1000.0, tr.bytesIn())
	assert.Zero(t, tr.cancel(6*time.Microsecond, 77), "an id not in flight")
}

// The window clips: one transfer of 1 MB at 1 byte/ns moves through [0,
// 1) ms, and a window counts the part inside it, bytes and busy time
// alike. With unbounded bandwidth the bytes move at the landing instant,
// inside a window [opens, closes) at opens and not at closes.
func TestLinkWindowClips(t *testing.T) {
	ops := []linkOp{{at: 0, id: 0, bytes: 1e6}}
	us := time.Microsecond
	for _, s := range []LinkSharing{LinkFIFO, LinkFair} {
		for _, w := range []struct {
			opens, closes time.Duration
			want          float64
		}{{400 * us, 700 * us, 3e5}, {500 * us, Unbounded, 5e5}, {0, 250 * us, 2.5e5}, {2 * time.Millisecond, Unbounded, 0}, {0, 0, 0}} {
			r := driveLink(t, Link{Bandwidth: 1e9, Sharing: s}, w.opens, w.closes, ops, 1)
			assert.Equal(t, w.want, r.tr.bytesIn(), "%v %+v", s, w)
			assert.Equal(t, time.Duration(w.want), r.tr.busyIn(), "%v %+v", s, w)
		}
		// Two transfers in a row straddle [0.5, 1.5) ms between them.
		r := driveLink(t, Link{Bandwidth: 1e9, Sharing: s}, 500*us, 1500*us, append(ops, linkOp{at: 0, id: 1, bytes: 1e6}), 2)
		assert.Equal(t, 1e6, r.tr.bytesIn(), "%v", s)
		assert.Equal(t, time.Millisecond, r.tr.busyIn(), "%v", s)
	}
	for _, w := range []struct {
		opens, closes time.Duration
		want          float64
	}{{time.Millisecond, Unbounded, 7}, {0, time.Millisecond, 0}, {0, time.Millisecond + 1, 7}} {
		r := driveLink(t, Link{Latency: time.Millisecond}, w.opens, w.closes, []linkOp{{at: 0, id: 0, bytes: 7}}, 1)
		assert.Equal(t, w.want, r.tr.bytesIn(), "%+v", w)
	}
	// Asked mid-transfer, the integrals run to the link's latest instant.
	tr := newTransfers(Link{Bandwidth: 1e9, Sharing: LinkFair}, 100*us, Unbounded)
	tr.start(0, 0, 1e6)
	tr.land(300*us, nil)
	assert.Equal(t, 2e5, tr.bytesIn())
	assert.Equal(t, 200*us, tr.busyIn())
}

// ceilNs is ⌈c·10⁹/B⌉ exactly, against big.Rat, over bandwidths with and
// without a fraction (B = m·2^e with e < 0 and e ≥ 0) and byte counts up
// to 10¹⁵; Link.Time adds the latency.
func TestPaceCeilIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bws := []float64{MinLinkBandwidth, 1e9, 3e9, 12.5e9, 50e9, 400e9, 1e15, 1.7e308, 0.1e9 / 3, 987654.321, 0x1p40, 0x1p33 * 3, 0x1p70, 1024.5}
	for range 200 {
		bws = append(bws, MinLinkBandwidth*math.Pow(10, 12*rng.Float64()))
	}
	for _, bw := range bws {
		p := newPace(bw)
		for _, c := range []uint64{0, 1, 2, 999, 1e6, 81920 * 2000, 1e12, 1e15, rng.Uint64N(1e15)} {
			want := new(big.Rat).SetFrac(new(big.Int).Mul(new(big.Int).SetUint64(c), big.NewInt(1e9)), big.NewInt(1))
			want.Quo(want, new(big.Rat).SetFloat64(bw))
			w := ratCeil(want)
			if !w.IsInt64() {
				assert.Equal(t, time.Duration(math.MaxInt64), p.ceilNs(c), "B %v, c %d", bw, c)
				continue
			}
			assert.Equal(t, time.Duration(w.Int64()), p.ceilNs(c), "B %v, c %d", bw, c)
		}
	}
	l := Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond}
	assert.Equal(t, 20*time.Microsecond+3276800, l.Time(2000*81920))
	assert.Equal(t, 20*time.Microsecond, Link{Latency: 20 * time.Microsecond}.Time(1e12))
	// The largest validated transfer on the slowest link fits: 10⁹ s.
	assert.Equal(t, MaxDuration+time.Duration(1e18), Link{Bandwidth: MinLinkBandwidth, Latency: MaxDuration}.Time(MaxTransferBytes))
}

func ratCeil(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// refLink simulates a link event by event in exact rational arithmetic,
// the slow definition the state machine is held to: at each instant,
// transfers whose bytes ran out land first, then byte phases begin, then
// the ops of the instant apply.
type refLink struct {
	landed        []*big.Rat // exact end of each id's last byte; nil if it never landed
	moved         []*big.Rat
	bytesIn, busy *big.Rat // inside the window
}

func simulateRef(l Link, opens, closes time.Duration, ops []linkOp, ids int) refLink {
	type xfer struct {
		phase         int64
		bytes         int64
		rem           *big.Rat
		live, inBytes bool
		seq           int
	}
	res := refLink{landed: make([]*big.Rat, ids), moved: make([]*big.Rat, ids), bytesIn: new(big.Rat), busy: new(big.Rat)}
	xs := make([]xfer, ids)
	bps := new(big.Rat)
	if l.Bandwidth > 0 {
		bps.SetFloat64(l.Bandwidth)
		bps.Quo(bps, big.NewRat(1e9, 1))
	}
	rat := func(v int64) *big.Rat { return new(big.Rat).SetInt64(v) }
	lo, hi := rat(int64(opens)), rat(int64(closes))
	now := new(big.Rat)
	seq := 0
	serving := func() []int { // the ids in their byte phase that move now
		var s []int
		for id := range xs {
			if x := xs[id]; x.live && x.inBytes {
				s = append(s, id)
			}
		}
		if l.Sharing == LinkFIFO && len(s) > 1 {
			first := s[0]
			for _, id := range s {
				if xs[id].seq < xs[first].seq {
					first = id
				}
			}
			s = []int{first}
		}
		return s
	}
	for i := 0; ; {
		// Landings, then byte phases beginning, at now.
		changed := false
		for _, id := range serving() {
			if xs[id].rem.Sign() == 0 {
				xs[id].live = false
				res.landed[id] = new(big.Rat).Set(now)
				res.moved[id] = rat(xs[id].bytes)
				changed = true
			}
		}
		if changed {
			continue
		}
		for id := range xs {
			if x := &xs[id]; x.live && !x.inBytes && now.Cmp(rat(x.phase)) >= 0 {
				x.inBytes, changed = true, true
				if l.Bandwidth == 0 {
					x.rem.SetInt64(0)
					if now.Cmp(lo) >= 0 && now.Cmp(hi) < 0 {
						res.bytesIn.Add(res.bytesIn, rat(x.bytes))
					}
				}
			}
		}
		if changed {
			continue
		}
		if i < len(ops) && now.Cmp(rat(int64(ops[i].at))) == 0 {
			op := ops[i]
			i++
			x := &xs[op.id]
			if !op.cancel {
				*x = xfer{phase: int64(op.at + l.Latency), bytes: op.bytes, rem: rat(op.bytes), live: true, seq: seq}
				seq++
			} else if x.live {
				x.live = false
				res.moved[op.id] = new(big.Rat).Sub(rat(x.bytes), x.rem)
			}
			continue
		}
		// The next instant: an op, a byte phase, or a landing.
		var next *big.Rat
		consider := func(t *big.Rat) {
			if next == nil || t.Cmp(next) < 0 {
				next = t
			}
		}
		if i < len(ops) {
			consider(rat(int64(ops[i].at)))
		}
		for _, x := range xs {
			if x.live && !x.inBytes {
				consider(rat(x.phase))
			}
		}
		s := serving()
		share := new(big.Rat)
		if len(s) > 0 {
			share.Quo(bps, rat(int64(len(s))))
			for _, id := range s {
				consider(new(big.Rat).Add(now, new(big.Rat).Quo(xs[id].rem, share)))
			}
		}
		if next == nil {
			return res
		}
		dt := new(big.Rat).Sub(next, now)
		if len(s) > 0 {
			for _, id := range s {
				xs[id].rem.Sub(xs[id].rem, new(big.Rat).Mul(share, dt))
			}
			a, b := maxRat(now, lo), minRat(next, hi)
			if a.Cmp(b) < 0 {
				in := new(big.Rat).Sub(b, a)
				res.busy.Add(res.busy, in)
				res.bytesIn.Add(res.bytesIn, in.Mul(in, bps))
			}
		}
		now = next
	}
}

func maxRat(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

func minRat(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// checkAgainstRef holds a run of the state machine to the exact
// simulation: each landing at the exact end rounded up (FIFO and
// unbounded bandwidth: equal; fair sharing: within a nanosecond, its
// float64 arithmetic being relative, about 10⁻¹⁵ of a transfer's time,
// and landingGuard letting an end a picosecond past a whole nanosecond
// land on it); the same transfers cancelled, each having moved the same
// bytes; the window's bytes and busy time; and the utilisation identity
// bytesIn = Bandwidth × busyIn. Under fair sharing a cancel within a
// nanosecond of a landing may find the transfer landed or not; the runs
// part there and the check stops, reporting false.
func checkAgainstRef(t *testing.T, l Link, opens, closes time.Duration, ops []linkOp, ids int) bool {
	t.Helper()
	r := driveLink(t, l, opens, closes, ops, ids)
	ref := simulateRef(l, opens, closes, ops, ids)
	exact := l.Sharing == LinkFIFO || l.Bandwidth == 0
	cancelAt := make([]time.Duration, ids)
	for _, op := range ops {
		if op.cancel {
			cancelAt[op.id] = op.at
		}
	}
	for id := range ids {
		if (ref.landed[id] != nil) != (r.at[id] >= 0) {
			require.False(t, exact, "%v: transfer %d landed %v, exactly %v", l, id, r.at[id], ref.landed[id])
			d := r.at[id]
			if ref.landed[id] != nil {
				d = time.Duration(ratCeil(ref.landed[id]).Int64())
			}
			require.InDelta(t, float64(cancelAt[id]), float64(d), 1, "%v: transfer %d parted from the exact run far from its cancel", l, id)
			return false
		}
	}
	for id := range ids {
		if ref.landed[id] == nil {
			if ref.moved[id] != nil {
				want, _ := ref.moved[id].Float64()
				assert.InDelta(t, want, r.moved[id], l.Bandwidth/1e9+1e-9*want, "%v: bytes moved by cancelled %d", l, id)
			}
			continue
		}
		want := time.Duration(ratCeil(ref.landed[id]).Int64())
		if exact {
			require.Equal(t, want, r.at[id], "%v: transfer %d", l, id)
		} else {
			require.InDelta(t, float64(want), float64(r.at[id]), 1, "%v: transfer %d", l, id)
		}
	}
	// Landing order: by instant, ties in start order (ids are in start order).
	for k := 1; k < len(r.order); k++ {
		a, b := r.order[k-1], r.order[k]
		require.True(t, r.at[a] < r.at[b] || r.at[a] == r.at[b] && a < b, "%v: %d at %v reported before %d at %v", l, a, r.at[a], b, r.at[b])
	}
	wantBytes, _ := ref.bytesIn.Float64()
	wantBusy, _ := ref.busy.Float64()
	bpn := l.Bandwidth / 1e9
	assert.InDelta(t, wantBytes, r.tr.bytesIn(), 2*bpn+1e-9*wantBytes, "%v: bytes in [%v, %v)", l, opens, closes)
	assert.InDelta(t, wantBusy, float64(r.tr.busyIn()), 1, "%v: busy in [%v, %v)", l, opens, closes)
	if l.Bandwidth > 0 {
		assert.InDelta(t, r.tr.bytesIn(), l.Bandwidth*r.tr.busyIn().Seconds(), bpn+1e-9*wantBytes, "%v: bytesIn = Bandwidth × busyIn", l)
	}
	return true
}

// randomLink draws a link and a stream of starts and cancels: ties of
// instants and of sizes, zero-byte transfers, bursts and idle gaps.
func randomLink(rng *rand.Rand) (Link, time.Duration, time.Duration, []linkOp, int) {
	bws := []float64{0, 1e9, 3e9, 12.5e9, 50e9, 7e8 / 3, MinLinkBandwidth * (1 + 1e6*rng.Float64())}
	l := Link{Bandwidth: bws[rng.IntN(len(bws))], Sharing: LinkSharing(rng.IntN(2))}
	if rng.IntN(2) == 0 {
		l.Latency = time.Duration(rng.Int64N(50_000))
	}
	n := 1 + rng.IntN(30)
	sizes := []int64{0, 1, 1000, 1e6, 163_840_000}
	var ops []linkOp
	var at time.Duration
	for id := range n {
		switch rng.IntN(4) {
		case 0: // together with the previous
		case 1:
			at += time.Duration(rng.Int64N(100))
		default:
			at += time.Duration(rng.Int64N(2_000_000))
		}
		b := sizes[rng.IntN(len(sizes))]
		if rng.IntN(2) == 0 {
			b = rng.Int64N(3_000_000)
		}
		ops = append(ops, linkOp{at: at, id: int32(id), bytes: b})
	}
	end := at + 5*time.Millisecond
	for id := range n {
		if rng.IntN(4) == 0 {
			c := ops[id].at + time.Duration(rng.Int64N(int64(end-ops[id].at)))
			ops = append(ops, linkOp{at: c, cancel: true, id: int32(id)})
		}
	}
	sortOps(ops)
	opens, closes := time.Duration(0), Unbounded
	if rng.IntN(2) == 0 {
		opens = time.Duration(rng.Int64N(int64(end)))
		closes = opens + time.Duration(rng.Int64N(int64(end)))
	}
	return l, opens, closes, ops, n
}

// sortOps orders ops by instant, stably (starts keep their order).
func sortOps(ops []linkOp) {
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].at < ops[j-1].at; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

// The state machine against the exact simulation on random streams, and
// conservation: over a window covering everything, the bytes moved are
// the bytes started less what cancelled transfers never moved.
func TestLinkAgainstExactSimulation(t *testing.T) {
	parted := 0
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 38))
		l, opens, closes, ops, n := randomLink(rng)
		if !checkAgainstRef(t, l, opens, closes, ops, n) {
			parted++
			continue
		}
		if opens != 0 || closes != Unbounded {
			continue
		}
		r := driveLink(t, l, 0, Unbounded, ops, n)
		var started, unmoved float64
		bytes := make([]int64, n)
		for _, op := range ops {
			if !op.cancel {
				started += float64(op.bytes)
				bytes[op.id] = op.bytes
			}
		}
		for id := range n {
			if r.cancelled[id] {
				unmoved += float64(bytes[id]) - r.moved[id]
				continue
			}
			require.GreaterOrEqual(t, r.at[id], time.Duration(0), "seed %d: transfer %d neither landed nor cancelled", seed, id)
		}
		require.InDelta(t, started-unmoved, r.tr.bytesIn(), 1e-9*started, "seed %d: %v", seed, l)
	}
	assert.Less(t, parted, 4, "runs parted from the exact one at a cancel within 1 ns of a landing")
}

// A LinkFair transfer started alone on an idle link (solo) lands where
// the plain state machine lands it, and leaves the link as it would
// (every next, landing, order, cancel's bytes and integral the same,
// bit for bit), on random streams (randomLink's, fair) and on streams of
// isolated transfers with a cancel, an edge or a second start now and
// then inside the first's latency or byte phase.
func TestLinkSoloIsPlain(t *testing.T) {
	solos := 0
	for seed := range uint64(600) {
		rng := rand.New(rand.NewPCG(seed, 41))
		l, opens, closes, ops, n := randomLink(rng)
		l.Sharing = LinkFair
		if seed%2 == 1 { // isolated transfers, some overlapping
			l.Bandwidth = []float64{1e9, 50e9, 7e8 / 3}[rng.IntN(3)]
			l.Latency = time.Duration(rng.Int64N(40_000))
			ops, n = ops[:0], 1+rng.IntN(30)
			var at time.Duration
			for id := range n {
				at += time.Duration(rng.Int64N(4_000_000))
				ops = append(ops, linkOp{at: at, id: int32(id), bytes: rng.Int64N(3_000_000)})
				if rng.IntN(5) == 0 {
					ops = append(ops, linkOp{at: at + time.Duration(rng.Int64N(200_000)), cancel: true, id: int32(id)})
				}
			}
			sortOps(ops)
			opens, closes = 0, Unbounded
			if rng.IntN(2) == 0 {
				opens = time.Duration(rng.Int64N(int64(at + 1)))
				closes = opens + time.Duration(rng.Int64N(int64(at+1)))
			}
		}
		if l.Bandwidth == 0 {
			l.Bandwidth = 3e9
		}
		solos += requireSoloIsPlain(t, l, opens, closes, ops, n)
	}
	assert.Greater(t, solos, 1000, "transfers landed by the solo path")
	t.Logf("%d transfers landed by the solo path", solos)
}

// requireSoloIsPlain drives the stream through the link with the solo
// path and without (plain), requires the two the same, bit for bit, and
// returns the solo path's landings.
func requireSoloIsPlain(t *testing.T, l Link, opens, closes time.Duration, ops []linkOp, n int) int {
	t.Helper()
	plain := newTransfers(l, opens, closes)
	plain.plain = true
	p := driveTransfers(t, plain, ops, n)
	f := driveTransfers(t, newTransfers(l, opens, closes), ops, n)
	require.Zero(t, p.solos)
	require.Equal(t, p.nexts, f.nexts, "%v", l)
	require.Equal(t, p.at, f.at, "%v", l)
	require.Equal(t, p.order, f.order, "%v", l)
	require.Equal(t, p.moved, f.moved, "%v", l)
	require.Equal(t, p.tr.bytesIn(), f.tr.bytesIn(), "%v", l)
	require.Equal(t, p.tr.busyIn(), f.tr.busyIn(), "%v", l)
	require.Equal(t, p.tr.busyFrac, f.tr.busyFrac, "%v", l)
	require.Equal(t, p.tr.t0, f.tr.t0, "%v", l)
	return f.solos
}

// Same configuration, same stream: the same landings and integrals. And
// looking at the link more often (collecting at every microsecond, which
// lands nothing new) changes nothing: the state moves only at events.
func TestLinkDeterministicAndPollFree(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l, opens, closes, ops, n := randomLink(rng)
		a := driveLink(t, l, opens, closes, ops, n)
		b := driveLink(t, l, opens, closes, ops, n)
		require.Equal(t, a.at, b.at)
		require.Equal(t, a.order, b.order)
		require.Equal(t, a.tr.bytesIn(), b.tr.bytesIn())
		// Polled: a land at every microsecond between the ops.
		var polled []linkOp
		for i, op := range ops {
			if i > 0 {
				for p := ops[i-1].at + time.Microsecond; p < op.at; p += time.Microsecond {
					polled = append(polled, linkOp{at: p, cancel: true, id: -1})
				}
			}
			polled = append(polled, op)
		}
		tr := newTransfers(l, opens, closes)
		at := make([]time.Duration, n)
		var out []int32
		for i := 0; ; {
			next, ok := tr.next()
			if i < len(polled) && (!ok || polled[i].at < next) {
				op := polled[i]
				i++
				switch {
				case op.id < 0:
					require.Empty(t, tr.land(op.at, out[:0]))
				case op.cancel:
					tr.cancel(op.at, op.id)
				default:
					tr.start(op.at, op.id, op.bytes)
				}
				continue
			}
			if !ok {
				break
			}
			for _, id := range tr.land(next, out[:0]) {
				at[id] = next
			}
		}
		for id := range n {
			if a.at[id] >= 0 {
				require.Equal(t, a.at[id], at[id], "seed %d: transfer %d", seed, id)
			}
		}
	}
}

// Once its slices have grown, the link allocates nothing per transfer.
func TestLinkAllocatesNothing(t *testing.T) {
	for _, s := range []LinkSharing{LinkFIFO, LinkFair} {
		tr := newTransfers(Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: s}, 0, Unbounded)
		var now time.Duration
		out := make([]int32, 0, 64)
		cycle := func() {
			for id := range int32(32) {
				tr.start(now, id, 1e6+int64(id)*1000)
				now += time.Microsecond
			}
			tr.cancel(now, 31)
			for {
				at, ok := tr.next()
				if !ok {
					break
				}
				now = at
				out = tr.land(at, out[:0])
			}
		}
		cycle()
		assert.Zero(t, testing.AllocsPerRun(20, cycle), "%v", s)
	}
}

func TestLinkValidate(t *testing.T) {
	require.NoError(t, Link{}.Validate())
	require.NoError(t, Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: LinkFair}.Validate())
	for _, c := range []struct {
		l    Link
		want string
	}{
		{Link{Bandwidth: -1}, "Link.Bandwidth must be >= 0"},
		{Link{Bandwidth: math.NaN()}, "Link.Bandwidth must be a finite number"},
		{Link{Bandwidth: math.Inf(1)}, "Link.Bandwidth must be a finite number"},
		{Link{Bandwidth: 10}, "Link.Bandwidth must be 0 (unbounded) or >= MinLinkBandwidth"},
		{Link{Latency: -time.Nanosecond}, "Link.Latency must be >= 0"},
		{Link{Latency: MaxDuration + 1}, "Link.Latency must be <= MaxDuration"},
		{Link{Sharing: 2}, "Link.Sharing must be LinkFIFO (0) or LinkFair (1), got 2"},
	} {
		assert.ErrorContains(t, c.l.Validate(), c.want)
	}
	assert.ErrorContains(t, Link{Bandwidth: -1}.validate("Pools.Link"), "sim: Pools.Link.Bandwidth")
}

func TestLinkString(t *testing.T) {
	assert.Equal(t, "instant", Link{}.String())
	assert.Equal(t, "instant", Link{Sharing: LinkFair}.String())
	assert.Equal(t, "unbounded, 20µs", Link{Latency: 20 * time.Microsecond}.String())
	assert.Equal(t, "50 GB/s, 20µs, fifo", Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond}.String())
	assert.Equal(t, "12.5 GB/s, 0s, fair", Link{Bandwidth: 12.5e9, Sharing: LinkFair}.String())
	assert.Equal(t, "400 MB/s, 1ms, fifo", Link{Bandwidth: 400e6, Latency: time.Millisecond}.String())
	assert.Equal(t, "LinkSharing(7)", LinkSharing(7).String())
}

// FuzzTransfers turns bytes into a link and a stream of starts and
// cancels and holds the state machine to the exact simulation
// (checkAgainstRef).
//
//	go test ./sim -run '^$' -fuzz FuzzTransfers -fuzztime 30s
func FuzzTransfers(f *testing.F) {
	f.Add([]byte{1, 0, 3, 0, 10, 200, 0, 0, 0, 5, 20, 3, 1, 9})
	f.Add([]byte{2, 1, 0, 7, 0, 0, 0, 0, 255, 255, 4, 4, 4, 1, 3})
	f.Add([]byte{5, 1, 9, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		bws := []float64{0, 1e9, 3e9, 12.5e9, 50e9, 7e8 / 3, MinLinkBandwidth * 3.7}
		l := Link{Bandwidth: bws[int(data[0])%len(bws)], Sharing: LinkSharing(data[1] % 2),
			Latency: time.Duration(data[2]) * 997}
		opens, closes := time.Duration(0), Unbounded
		if data[3]%2 == 1 {
			opens, closes = time.Duration(data[3])*10_007, time.Duration(data[3])*30_011
		}
		var ops []linkOp
		var at time.Duration
		n := 0
		for i := 4; i+1 < len(data) && n < 40; i += 2 {
			a, b := data[i], data[i+1]
			at += time.Duration(a%16) * time.Duration(a/16) * 7_001
			if b >= 224 && n > 0 { // a cancel of an earlier transfer
				ops = append(ops, linkOp{at: at, cancel: true, id: int32(int(b) % n)})
				continue
			}
			ops = append(ops, linkOp{at: at, id: int32(n), bytes: int64(b) * int64(b) * 37})
			n++
		}
		checkAgainstRef(t, l, opens, closes, ops, n)
		requireSoloIsPlain(t, l, opens, closes, ops, n) // the solo path (TestLinkSoloIsPlain)
	})
}

// BenchmarkLink is a transfer's cost to the event loop: start, next,
// land, with 32 in flight at once (and one cancel in 32).
func BenchmarkLink(b *testing.B) {
	for _, s := range []LinkSharing{LinkFIFO, LinkFair} {
		b.Run(s.String(), func(b *testing.B) {
			tr := newTransfers(Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: s}, 0, Unbounded)
			var now time.Duration
			out := make([]int32, 0, 64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				id := int32(i % 32)
				tr.start(now, id, 163_840_000+int64(id)*81920)
				now += 100 * time.Microsecond
				if id == 31 {
					tr.cancel(now, 30)
				}
				for tr.inFlight() >= 32 || id == 31 && tr.inFlight() > 0 {
					at, _ := tr.next()
					now = max(now, at)
					out = tr.land(now, out[:0])
				}
			}
		})
	}
}

// TestLinkSoloLandsAtAStart holds the solo path's landing by a step
// (landSolo: a transfer started at the very instant the solo transfer
// lands, before that landing is taken, as a decode replica may reserve
// at another's landing instant) to the plain state machine: every next,
// landing and order, and the link's integrals, bit for bit, with and
// without a window whose edges fall on landing instants.
func TestLinkSoloLandsAtAStart(t *testing.T) {
	bySteps := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 55))
		l := Link{Bandwidth: []float64{1e9, 50e9, 7e8 / 3}[rng.IntN(3)], Latency: time.Duration(rng.Int64N(40_000)), Sharing: LinkFair}
		opens, closes := time.Duration(0), Unbounded
		if seed%3 == 1 {
			opens, closes = time.Duration(rng.Int64N(20_000_000)), time.Duration(20_000_000+rng.Int64N(40_000_000))
		}
		p, f := newTransfers(l, opens, closes), newTransfers(l, opens, closes)
		p.plain = true
		var now time.Duration
		var outP, outF []int32
		// landUntil takes both links' landings before s (at s too unless
		// exact), each compared.
		landUntil := func(s time.Duration, exact bool) {
			for {
				at, ok := p.next()
				atF, okF := f.next()
				require.Equal(t, ok, okF)
				require.Equal(t, at, atF)
				if !ok || at > s || exact && at == s {
					return
				}
				outP, outF = p.land(at, outP[:0]), f.land(at, outF[:0])
				require.Equal(t, outP, outF)
				now = at
			}
		}
		for id := range int32(24) {
			s := now + time.Duration(rng.Int64N(4_000_000))
			at, ok := p.next()
			exact := ok && rng.IntN(2) == 0
			if exact {
				s = at // the start comes first, then the landing
				if f.solo && f.soloAt == at {
					bySteps++
				}
			}
			landUntil(s, exact)
			now = s
			b := rng.Int64N(3_000_000)
			p.start(now, id, b)
			f.start(now, id, b)
		}
		landUntil(Unbounded, false)
		require.Equal(t, p.moved, f.moved)
		require.Equal(t, p.bytesIn(), f.bytesIn())
		require.Equal(t, p.busyIn(), f.busyIn())
		require.Equal(t, p.busyFrac, f.busyFrac)
		require.Equal(t, p.t0, f.t0)
	}
	t.Logf("%d solo transfers landed by a start's step", bySteps)
	require.Greater(t, bySteps, 500)
}
