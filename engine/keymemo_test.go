package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/lcp"
)

// memoPrompt keys prefix through m and directly (appendShared, the
// twin), fails t if the chains differ, and reports how many keys the
// memo gave. A prefix of at most two runs of consecutive ids promises
// so (sharedKeys' two), as a synthetic source's does.
func memoPrompt(t *testing.T, m *keyMemo, prefix []uint64, p, b, to int) int {
	t.Helper()
	want := appendShared(nil, rootKey, prefix, p, b, 0, to)
	sl := m.slots
	known := 0
	if sl != nil {
		s := &sl[int((prefix[0]*0x9e3779b97f4a7c15)>>32)%keyMemoSlots]
		if s.p == p && s.b == b {
			known = min(len(s.keys), lcp.Len(s.ids, prefix)*p/b, to)
		}
	}
	got := m.sharedKeys([]uint64{}, prefix, p, b, to, atMostTwoRuns(prefix))
	require.Equal(t, want, got, "p %d, b %d, %d ids %v, to %d", p, b, len(prefix), prefix, to)
	return known
}

// atMostTwoRuns reports whether ids are at most two runs of consecutive ids
// (ascend.TwoRuns' promise), counted one id at a time.
func atMostTwoRuns(ids []uint64) bool {
	runs := 1
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			runs++
		}
	}
	return runs <= 2
}

// TestKeyMemoTwoRunsIsCommon drives two memos with the same prompts, one
// comparing a prompt that promises two runs with its slot's by
// ascend.CommonTwo, the other by ascend.Common (memoNoTwo, the slow
// twin): groups' runs of shared ids cut at random lengths, then runs of
// their own, and now and then a prompt of many runs with a group's
// first id (its slot's, which then promises nothing), one whose group's
// run has another id at one place, or a group's prompt keyed at another
// size. Every chain must be appendShared's and
// every slot the twin's after each prompt (a promised prompt after two
// of a run broken alike must not take the slot's ids for a run); and CommonTwo must answer
// without a compare (the slot's run and the prompt's agree to at, and
// part there) for most of the group's prompts.
func TestKeyMemoTwoRunsIsCommon(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 1))
	var fast, slow keyMemo
	fresh := uint64(1 << 40)
	short, prompts := 0, 0
	for range 20_000 {
		g := uint64(rng.IntN(6)) << 20
		shared := 256 // a group's run of one length, mostly
		if rng.IntN(8) == 0 {
			shared = []int{255, 257, 64, 1 + rng.IntN(300)}[rng.IntN(4)]
		}
		var prefix []uint64
		for k := range shared {
			prefix = append(prefix, g+uint64(k))
		}
		switch rng.IntN(20) {
		case 0: // many runs: it promises nothing
			for range 1 + rng.IntN(40) {
				prefix = append(prefix, rng.Uint64N(1<<20))
			}
		case 2, 3: // the group's ids with one other in their run (its slot's ids then no run), then its own
			if shared > 100 {
				prefix[100] = 7
			}
			for range 1 + rng.IntN(40) {
				prefix = append(prefix, fresh)
				fresh++
			}
			fresh += 7
		case 1: // the group's run alone
		default:
			for range rng.IntN(40) {
				prefix = append(prefix, fresh)
				fresh++
			}
			fresh += 7
		}
		p, b := 16, 16
		if rng.IntN(50) == 0 {
			p, b = []int{16, 32, 512}[rng.IntN(3)], []int{16, 8}[rng.IntN(2)]
		}
		to := len(prefix) * p / b // a prompt keyed whole, mostly (a lookup's)
		if rng.IntN(8) == 0 || to == 0 {
			to = 1 + rng.IntN(max(to, 1))
		}
		two := atMostTwoRuns(prefix)
		// CommonTwo's answer without a compare, read off the slot before.
		if sl := fast.slots; sl != nil && two {
			s := &sl[memoSlot(prefix[0])]
			if at := s.at; s.p == p && s.b == b && at > 0 && s.asc >= at && at < min(len(s.ids), len(prefix)) &&
				s.ids[0] == prefix[0] && prefix[at-1] == prefix[0]+uint64(at-1) && s.ids[at] != prefix[at] {
				short++
			}
		}
		if two {
			prompts++
		}
		want := appendShared(nil, rootKey, prefix, p, b, 0, to)
		got := fast.sharedKeys([]uint64{}, prefix, p, b, to, two)
		memoNoTwo = true
		twin := slow.sharedKeys([]uint64{}, prefix, p, b, to, two)
		memoNoTwo = false
		require.Equal(t, want, got, "%d ids, to %d", len(prefix), to)
		require.Equal(t, want, twin)
		x := memoSlot(prefix[0])
		require.Equal(t, slow.slots[x], fast.slots[x], "the slot after %d ids, to %d", len(prefix), to)
	}
	t.Logf("%d of %d prompts promising two runs compared by CommonTwo without a compare", short, prompts)
	require.Greater(t, short, prompts/2, "CommonTwo answers most of the groups' prompts")
}

// TestKeyMemoIsAppendShared holds the memo to appendShared over prompts
// of a few families (a shared beginning, then ids of their own, some
// prompts extending an earlier one as a conversation does), under
// unit and block sizes that change now and then, with few first ids so that slots are
// shared and overwritten.
func TestKeyMemoIsAppendShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 2))
	var m keyMemo
	var prev []uint64
	fresh := uint64(1000)
	from, keys := 0, 0
	b, p := 16, 16
	for i := range 5_000 {
		if i%250 == 0 || rng.IntN(100) == 0 { // now and then a new size, or one prompt of another
			b = []int{1, 3, 16, 16, 16, 32}[rng.IntN(6)]
			p = []int{16, 16, 16, 64, 100, 512}[rng.IntN(6)]
		}
		var prefix []uint64
		switch rng.IntN(3) {
		case 0: // a group's shared beginning, then its own
			g := rng.Uint64N(3)
			for k := range rng.IntN(10) {
				prefix = append(prefix, g*100+uint64(k))
			}
		case 1: // the last prompt so far, extended or cut
			prefix = append(prefix, prev[:rng.IntN(len(prev)+1)]...)
		}
		for range rng.IntN(8) {
			prefix = append(prefix, fresh)
			fresh++
		}
		if len(prefix) == 0 {
			prefix = append(prefix, rng.Uint64N(4))
		}
		blocks := len(prefix) * p / b
		if blocks == 0 {
			continue
		}
		to := 1 + rng.IntN(blocks)
		from += memoPrompt(t, &m, prefix, p, b, to)
		keys += to
		prev = prefix
	}
	t.Logf("%d of %d keys from the memo", from, keys)
	assert.Greater(t, from, keys/10, "the memo gives a share of the keys")
}

// FuzzKeyMemo holds the memo to appendShared over prompts the fuzzer
// spells: each byte pair is a prompt, its ids drawn from a few so that
// prompts share beginnings.
func FuzzKeyMemo(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x12, 0x35, 0xff, 0x01, 0x12, 0x34})
	f.Add([]byte{0, 0, 0, 1, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m keyMemo
		for i := 0; i+1 < len(data); i += 2 {
			x, y := data[i], data[i+1]
			b := []int{1, 3, 16, 32}[x&3]
			p := []int{16, 48, 64, 512}[x>>2&3]
			n := 1 + int(x>>4)
			prefix := make([]uint64, n)
			for k := range prefix {
				prefix[k] = uint64(k) + uint64(y&3)*uint64(k/int(1+y>>2&3)) // families sharing leading ids
			}
			blocks := n * p / b
			if blocks == 0 {
				continue
			}
			memoPrompt(t, &m, prefix, p, b, 1+int(y>>4)%blocks)
		}
	})
}

// TestRunKeysIsAppendShared holds the memo's runs from the root
// (runKeys, Engine.RunKeys) to appendShared over the consecutive ids
// they stand for, asked in pieces as edges and routers ask (dst holding
// the first keys), under a few first ids, unit and block sizes (blocks
// straddling units too), so that a slot is extended, read short of its
// end and taken over.
func TestRunKeysIsAppendShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 3))
	var m keyMemo
	for range 3_000 {
		first := 1_000 * uint64(rng.IntN(4))
		p := []int{16, 32, 24, 8, 512}[rng.IntN(5)]
		b := []int{16, 5, 8}[rng.IntN(3)]
		to := 1 + rng.IntN(100)
		ids := make([]uint64, to*b/p+1)
		for i := range ids {
			ids[i] = first + uint64(i)
		}
		want := appendShared(nil, rootKey, ids, p, b, 0, to)
		from := rng.IntN(to)
		got := m.runKeys(append([]uint64(nil), want[:from]...), first, p, b, to)
		require.Equal(t, want, got, "first %d, p %d, b %d, from %d to %d", first, p, b, from, to)
	}
}

// TestRunMemoIsAscending holds appendRunPath through a memo
// (keyMemo.appendRuns) to appendRunPath scanning every id, over prompts
// that share beginnings with earlier ones of their slot by various
// lengths: a group's consecutive ids then fresh ones, earlier prompts
// cut, extended or changed at one id, runs broken anywhere, and slots
// that other first ids took meanwhile.
func TestRunMemoIsAscending(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 3))
	var m keyMemo
	var prompts [][]uint64
	fresh := uint64(1 << 20)
	reused := 0
	for range 20_000 {
		var ids []uint64
		switch rng.IntN(4) {
		case 0: // a group's run of ids, then fresh ones
			g := rng.Uint64N(4) * 300
			for k := range 1 + rng.IntN(300) {
				ids = append(ids, g+uint64(k))
			}
		case 1, 2: // an earlier prompt, cut, perhaps changed at one id
			if len(prompts) > 0 {
				prev := prompts[rng.IntN(len(prompts))]
				ids = append(ids, prev[:1+rng.IntN(len(prev))]...)
				if rng.IntN(2) == 0 {
					ids[rng.IntN(len(ids))] += uint64(rng.IntN(3)) - 1
				}
				reused++
			}
		}
		for range rng.IntN(40) {
			ids = append(ids, fresh)
			if fresh++; rng.IntN(10) == 0 {
				fresh += uint64(rng.IntN(3))
			}
		}
		if len(ids) == 0 || rng.IntN(50) == 0 {
			ids = append(ids[:0], uint64(rng.IntN(3))) // one of a few prompts of one id
		}
		per := []int{1, 1, 2, 4, 32}[rng.IntN(5)]
		shared := len(ids)*per - rng.IntN(per) // the last unit perhaps in part
		got := appendRunPath(&m, nil, ids, per*16, 16, shared, false, 7)
		want := appendRunPath(nil, nil, ids, per*16, 16, shared, false, 7)
		if !slices.Equal(got, want) {
			t.Fatalf("ids %v, %d blocks of %d a unit: through the memo %v, scanned %v", ids, shared, per, got, want)
		}
		prompts = remember(rng, prompts, ids)
	}
	assert.Greater(t, reused, 5_000)
}

// remember keeps ids among prompts, of at most 64 (then in a random
// one's place), and returns them.
func remember(rng *rand.Rand, prompts [][]uint64, ids []uint64) [][]uint64 {
	if len(prompts) < 64 {
		return append(prompts, ids)
	}
	prompts[rng.IntN(len(prompts))] = ids
	return prompts
}

// TestTwoRunsIsScan holds appendRunPath's bisection (a request that
// promises at most two runs of ids, Request.PrefixTwoRuns) to its scan: on
// ids of one or two runs, cut anywhere, the paths are equal, through
// the memo or not; on ids of three runs promised as two, they are equal
// whenever ascend.Two's check catches the broken promise.
func TestTwoRunsIsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 11))
	var m keyMemo
	caught := 0
	for range 20_000 {
		n := 1 + rng.IntN(300)
		ids := make([]uint64, n)
		first, brk := rng.Uint64N(1<<20), rng.IntN(n+1)
		second, third := rng.Uint64N(1<<20), rng.Uint64N(1<<20)
		lie := rng.IntN(4) == 0
		brk3 := brk + rng.IntN(n-brk+1)
		for i := range ids {
			switch {
			case i < brk:
				ids[i] = first + uint64(i)
			case !lie || i < brk3:
				ids[i] = second + uint64(i-brk)
			default:
				ids[i] = third + uint64(i-brk3)
			}
		}
		per := []int{1, 1, 2, 4, 32}[rng.IntN(5)]
		units := 1 + rng.IntN(n) // a prompt cut anywhere
		shared := units*per - rng.IntN(per)
		want := appendRunPath(nil, nil, ids, per*16, 16, shared, false, 7)
		if _, ok := ascend.Two(ids[:(shared+per-1)/per], 0); lie && ok {
			continue // a broken promise that passes the check: nothing to hold
		} else if lie {
			caught++
		}
		for _, memo := range []*keyMemo{nil, &m} {
			if got := appendRunPath(memo, nil, ids, per*16, 16, shared, true, 7); !slices.Equal(got, want) {
				t.Fatalf("ids %v, %d blocks of %d a unit, two runs promised: %v, scanned %v", ids, shared, per, got, want)
			}
		}
	}
	assert.Greater(t, caught, 1_000)
}

// TestRisingIsScan holds appendRisingPath's bisection of rising ids
// (a request that promises them, as a conversation's turn does) to its
// scan: on rising ids of up to a dozen runs, or a prompt that resends
// an earlier one cut anywhere and adds runs (a conversation's next
// turn), cut anywhere, the paths are equal, through the memo (whose
// guess of the first run's end the prompts move) or not; on ids
// promised to rise that fall somewhere, they are equal whenever
// ascend.Rise's check catches it.
func TestRisingIsScan(t *testing.T) {
	var (
		rng     = rand.New(rand.NewPCG(41, 12))
		m       keyMemo
		prompts [][]uint64
		fresh   = uint64(1 << 20)
		caught  int
		guessed int
		hinted  int
	)
	for range 20_000 {
		n := 1 + rng.IntN(300)
		var ids []uint64
		switch {
		case len(prompts) > 0 && rng.IntN(2) == 0: // a next turn
			prev := prompts[rng.IntN(len(prompts))]
			ids = append(ids, prev[:rng.IntN(len(prev)+1)]...)
		case rng.IntN(2) == 0: // a group's shared ids
			g := uint64(rng.IntN(4))
			for i := range min(n, 64) {
				ids = append(ids, g*64+uint64(i))
			}
		}
		runs := 1 + rng.IntN(12)
		for len(ids) < n {
			ids = append(ids, fresh)
			fresh++
			if rng.IntN(n) < runs {
				fresh += 1 + rng.Uint64N(1+rng.Uint64N(1<<10))
			}
		}
		lie := rng.IntN(4) == 0
		if lie {
			ids[rng.IntN(len(ids))] = rng.Uint64N(1 << 21)
		} else {
			prompts = remember(rng, prompts, ids)
		}
		per := []int{1, 1, 2, 4, 32}[rng.IntN(5)]
		cut := 1 + rng.IntN(len(ids)) // a prompt cut anywhere
		shared := cut*per - rng.IntN(per)
		want := appendRunPath(nil, nil, ids, per*16, 16, shared, false, 7)
		units := ids[:cut]
		for _, memo := range []*keyMemo{nil, &m} {
			// appendRisingPath's two ways, the memo's guesses (of the
			// first run's end, and of the rest's in the slot of the id
			// after it) moved once.
			if k := ascend.Len(units); memo != nil && !lie && k < len(units) && len(*memo.risen(units[k])) > 0 {
				hinted++ // a slot with guesses
			}
			got, ok := appendRisen(nil, units, per, shared, memo)
			if lie && ok {
				continue // ids that do not rise where the bisection reads them: nothing to hold
			} else if lie && memo == nil {
				caught++
			}
			if ok {
				got = append(got, runLabel{c: runContent{kind: 3, id: 7}, n: ownRun})
			} else {
				got = appendRunPath(memo, nil, ids, per*16, 16, shared, false, 7)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ids %v, %d blocks of %d a unit, rising promised: %v, scanned %v", ids, shared, per, got, want)
			}
		}
		// The runs after the first from guesses of their ends, some wrong
		// (moved, dropped, added, out of order or range), as a memo's
		// slot shared by two prompts may hold them: the same labels, and
		// the ends written back.
		k := ascend.Len(units)
		if lie || k == len(units) {
			continue
		}
		ends := guessStarts(rng, units)
		tried := slices.Clone(ends)
		got, ok := appendRisenFrom(nil, units, k, per, shared, &ends)
		if want := want[1 : len(want)-1]; !ok || !slices.Equal(got, want) {
			t.Fatalf("ids %v from %d, %d blocks of %d a unit, ends guessed at %v: %v (%v), scanned %v", units, k, shared, per, tried, got, ok, want)
		}
		var wantEnds []int32
		for i := k + 1; i < len(units); i++ {
			if units[i] != units[i-1]+1 {
				wantEnds = append(wantEnds, int32(i))
			}
		}
		wantEnds = append(wantEnds, int32(len(units)-1), int32(len(units)))
		if !slices.Equal(ends, wantEnds) {
			t.Fatalf("ids %v from %d, ends guessed at %v: kept %v, want %v", units, k, tried, ends, wantEnds)
		}
		guessed++
	}
	assert.Greater(t, caught, 200)
	assert.Greater(t, guessed, 5_000)
	assert.Greater(t, hinted, 5_000)
}

// guessStarts is a guess of where the runs of ids after the first start
// (ascend.RisingAt's), as a source might make it: none, where they do,
// or that with some wrong (moved, dropped, added, out of order, out of
// range).
func guessStarts(rng *rand.Rand, ids []uint64) []int32 {
	if rng.IntN(5) == 0 {
		return nil
	}
	var starts []int32
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			starts = append(starts, int32(i))
		}
	}
	if rng.IntN(2) == 0 {
		return starts
	}
	for range 1 + rng.IntN(3) {
		if len(starts) == 0 || rng.IntN(4) == 0 {
			starts = append(starts, int32(rng.IntN(len(ids)+2)-1))
			continue
		}
		j := rng.IntN(len(starts))
		switch rng.IntN(3) {
		case 0:
			starts[j] += int32(rng.IntN(5) - 2)
		case 1:
			starts = slices.Delete(starts, j, j+1)
		default:
			starts = slices.Insert(starts, j, int32(rng.IntN(len(ids)+2)-1))
		}
	}
	return starts
}

// TestRisenPathIsApart holds appendRisenPath (appendRisingPath through
// a memo, in one function) to its twin, appendRisen's calls
// (risenApart), and both to the scan: on conversations whose turns
// resend the last turn's ids cut where its last block began, or not,
// or anywhere, and add runs of fresh ids (sometimes more runs than a
// slot's room, risenRoom), among more conversations than the memo has
// slots (a slot's ends taken over by another conversation), with a
// slot's ends sometimes guessed wrong and ids that do not rise, the
// labels after a path already in dst are equal, and so are the two
// memos after every call: the first run's guess and every slot's ends.
func TestRisenPathIsApart(t *testing.T) {
	defer func(was bool) { risenApart = was }(risenApart)
	var (
		rng          = rand.New(rand.NewPCG(41, 49))
		fused, apart keyMemo
		convs        [][]uint64
		fresh        = uint64(1 << 20)
		lies, kept   int
		taken, roomy int
	)
	for it := range 30_000 {
		var ids []uint64
		c := -1
		if len(convs) > 0 && rng.IntN(4) != 0 { // a conversation's next turn
			c = rng.IntN(len(convs))
			prev := convs[c]
			keep := len(prev)
			switch rng.IntN(4) {
			case 0:
				keep = rng.IntN(len(prev) + 1)
			case 1, 2:
				keep = max(len(prev)-1, 0)
			}
			ids = append(ids, prev[:keep]...)
		} else if rng.IntN(4) != 0 { // a conversation's first turn: its group's shared ids
			g := uint64(rng.IntN(16))
			for i := range 64 {
				ids = append(ids, g*64+uint64(i))
			}
		}
		runs := 1
		if rng.IntN(8) == 0 {
			runs = 1 + rng.IntN(24) // past a slot's room
		}
		for range runs {
			for range 1 + rng.IntN(40) {
				ids = append(ids, fresh)
				fresh++
			}
			fresh += 1 + rng.Uint64N(1+rng.Uint64N(1<<10))
		}
		lie := rng.IntN(16) == 0
		if lie {
			ids = slices.Clone(ids)
			switch j := rng.IntN(len(ids)); rng.IntN(3) {
			case 0:
				ids[j] = rng.Uint64N(1 << 21)
			case 1: // the last below the first
				ids[len(ids)-1] = ids[0] - min(ids[0], 1+rng.Uint64N(4))
			default: // one equal to the one before, or one less
				if j > 0 {
					ids[j] = ids[j-1] - rng.Uint64N(2)
				}
			}
		} else if c >= 0 {
			convs[c] = ids
		} else if len(convs) < 2_000 { // four times the memo's slots
			convs = append(convs, ids)
		} else {
			convs[rng.IntN(len(convs))] = ids
		}
		per := []int{1, 1, 1, 2, 4}[rng.IntN(5)]
		cut := len(ids)
		if rng.IntN(4) == 0 {
			cut = 1 + rng.IntN(len(ids))
		}
		shared := cut*per - rng.IntN(per)
		units := ids[:cut]
		if k := ascend.Len(units); k < len(units) {
			if rng.IntN(8) == 0 { // the slot's ends guessed wrong, both alike
				g := guessStarts(rng, units)
				// (not nil: a nil slot would have risen cut every slot's room again)
				*fused.risen(units[k]), *apart.risen(units[k]) = append([]int32{}, g...), append([]int32{}, g...)
			}
			if len(*fused.risen(units[k])) > 0 && len(*apart.risen(units[k])) > 0 {
				kept++
			}
		}
		var dst []runLabel
		if rng.IntN(4) == 0 { // a path already there
			dst = appendRunPath(nil, nil, []uint64{1, 2, 3, 9}, 16, 16, 4, false, 5)
		}
		if rng.IntN(2) == 0 { // its room written before, as a recycled request's path leaves it: each label is written whole
			dst = slices.Grow(dst, 2*risenRoom)
			for room, i := dst[:cap(dst)], len(dst); i < len(room); i++ {
				room[i] = runLabel{c: runContent{kind: 2, id: 99, off: 3}, per: 7, n: 11}
			}
		}
		want := appendRunPath(nil, slices.Clone(dst), ids, per*16, 16, shared, false, 7)
		risenApart = true
		twin := appendRisingPath(&apart, slices.Clone(dst), ids, per*16, 16, shared, 7)
		risenApart = false
		before := len(dst)
		got := appendRisingPath(&fused, dst, ids, per*16, 16, shared, 7)
		if !slices.Equal(got, twin) || !lie && !slices.Equal(got, want) { // a broken promise's check may pass: twin alone
			t.Fatalf("turn %d: ids %v, %d blocks of %d a unit: %v, apart %v, scanned %v", it, ids, shared, per, got, twin, want)
		}
		if len(got)-before > risenRoom+2 {
			roomy++
		}
		if fused.two != apart.two {
			t.Fatalf("turn %d: the first run's guess %v, apart %v", it, fused.two, apart.two)
		}
		if lie {
			lies++
		}
		for i := range fused.runs {
			if !slices.Equal(fused.runs[i].risen, apart.runs[i].risen) || !slices.Equal(fused.runs[i].ends, apart.runs[i].ends) {
				t.Fatalf("turn %d: slot %d's ends %v and runs %v, apart %v and %v", it, i, fused.runs[i].risen, fused.runs[i].ends, apart.runs[i].risen, apart.runs[i].ends)
			}
		}
		if c >= 0 && !lie {
			taken++
		}
	}
	t.Logf("%d turns through kept ends, %d next turns, %d lies, %d paths past a slot's room", kept, taken, lies, roomy)
	assert.Greater(t, kept, 15_000)
	assert.Greater(t, lies, 1_000)
	assert.Greater(t, roomy, 100)
}
