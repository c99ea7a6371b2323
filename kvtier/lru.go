package kvtier

import (
	"slices"

	"github.com/servesim/servesim/internal/keyindex"
)

// LRU is a tier of KV blocks by content key in least-recently-used order,
// with a capacity in blocks. Entries are keyed blocks (a later request
// can hit them) and anonymous runs (blocks that occupy capacity but that
// no request can hit, such as a request's own decode blocks under vLLM's
// write-through store); both are evicted from the least recent end. A
// pinned keyed entry (a load in flight) is never evicted.
//
// Create one with New. An LRU is not safe for concurrent use.
type LRU struct {
	capacity int
	used     int            // blocks held: keyed entries + anonymous blocks
	pinned   int            // keyed entries with pins > 0
	index    keyindex.Index // key → node
	room     int            // keys the index has room for (reserve)
	nodes    []node         // never shrinks: the nodes past its length are zero (stack)
	// The nodes free (zero), the last freed last: a stack, where a
	// list through the nodes' next had its takers walk it; a full
	// store takes its first ones (nextIDs), a queue's head.
	spare []int32
	epoch uint32
	fresh keySet // Insert's scratch: its new keys, to count each once
	// A touch's scratch: the first key at from or after not held (miss).
	from, miss int
	segs       []segment // runs a touch placed (segments.go)
	// What is left of the slabs segments' arrays are cut from (segRoom).
	slab64   []uint64
	slab32   []int32
	freeSegs []int32 // segments with no node, by number
	ids      []int32 // insertFreed's scratch: the nodes it may take (freeIDs)
	counters Counters
	cold     cold     // the last touch's keys when it held none (cold.go)
	last     lastHeld // the last TouchHeld, unless the list changed since (cold.go)
	ver      uint64   // counts the calls that may change the list (TouchHeld's memo)
	one      [1]int32 // heldRun's answer for a node in no segment
	chained  bool     // Config.Chained: segRun compares single keys
	// A test's switch: the index grows by itself (Reserve), reindex's
	// slow twin.
	growIndex bool
	// A test's switch: makeRoom unlinks each node it evicts
	// (makeRoomEach), its slow twin.
	evictEach bool
	// known is 1 + how many of the keys of the store roomFor just made
	// room for lead it held, every key after them new (protectRuns),
	// for the insert that follows (insertStacked takes it: insertNew);
	// 0 if not known. A test's switch, noKnown, leaves it 0: the insert
	// looks the keys up again (insertFreed), insertNew's slow twin.
	known   int
	noKnown bool
	// A test's switch: Store into a full tier never takes storeFused
	// (fullstore.go), its slow twin roomFor, makeRoom and insertStacked.
	noFused bool
	// at is the nodes protectRuns took for the store's new keys, which
	// it put in the index (keyindex's MissingPut), for insertNew (nextIDs:
	// spare's first ones where it holds as many, read where they lie).
	at []int32
	// spareUndo is spare before putNew took at from it, for a refused
	// store to give them back (roomFor).
	spareUndo []int32
	// atBuf is nextIDs' scratch where spare holds fewer ids than asked,
	// sized once; spareAll is the array spareRoom moves spare's ids to
	// the start of.
	atBuf, spareAll []int32
	// guards are the places of segments protectRuns protected by rows,
	// not by marks, in epoch guardEpoch (the rows' nodes unmarked, no
	// node pinned): makeRoom's evictRun evicts none of them.
	guards     []guard
	guardEpoch uint32
}

// guard is a row of places lo to hi of segment sg that a store holds.
type guard struct{ sg, lo, hi int32 }

// nil32 is the list's sentinel: nodes[0] is the head (its next is the least
// recent entry, its prev the most recent).
const nil32 int32 = 0

type node struct {
	key        uint64
	prev, next int32
	anon       int32 // blocks of an anonymous run; 0 for a keyed entry
	pins       int32
	mark       uint32 // an epoch: Insert's protected keys, Touch's moved ones
	seg, off   int32  // its segment's number (0: none) and place in it
}

// Counters are an LRU's running counts since New.
type Counters struct {
	// Hits and Misses count Lookup's answers.
	Hits, Misses int64
	// Evictions counts blocks evicted, keyed and anonymous.
	Evictions int64
	// Dropped counts blocks of refused inserts (Insert and InsertAnon
	// answering false): a full tier of pinned entries, or no tier.
	Dropped int64
}

// New returns an empty tier of c.Blocks blocks, or Validate's error.
func New(c Config) (*LRU, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &LRU{
		capacity: c.Blocks,
		chained:  c.Chained,
		nodes:    []node{{}},
	}, nil
}

// Capacity is the tier's size in blocks.
func (l *LRU) Capacity() int { return l.capacity }

// Len is the number of blocks held, keyed and anonymous.
func (l *LRU) Len() int { return l.used }

// Counters returns the running counts.
func (l *LRU) Counters() Counters { return l.counters }

// Lookup reports whether key is held, counting a hit or a miss. It does
// not change recency: a caller touches the keys it uses (Touch), as vLLM's
// connector touches a request's keys after its lookup
// (offloading/scheduler.py:493).
func (l *LRU) Lookup(key uint64) bool {
	_, ok := l.index.Get(key)
	if ok {
		l.counters.Hits++
	} else {
		l.counters.Misses++
	}
	return ok
}

// Contains reports whether key is held, counting nothing.
func (l *LRU) Contains(key uint64) bool {
	_, ok := l.index.Get(key)
	return ok
}

// Pinned reports whether key is held and pinned.
func (l *LRU) Pinned(key uint64) bool {
	i, ok := l.index.Get(key)
	return ok && l.nodes[i].pins > 0
}

// Touch makes the held keys among keys the most recent, in reverse, so
// keys[0] ends the most recent: for a chain of blocks, the chain's first
// block is evicted last (vLLM's lru.py:26-29). Keys not held are skipped;
// a key given twice ends where its first place puts it.
//
// It moves runs, not keys. A chain touched before lies in the list as
// runs in touch order (keys[j], then keys[j+1] just below it, ...), split
// only where other touches took keys out or inserts came between; keys
// an Insert just stored lie as runs in the order given (keys[j+1] just
// above keys[j]). One lookup finds a run's first key; the list walked
// from there matches the rest, key by key, without a lookup; the run
// moves whole (reversed, for an Insert's). The order it leaves is
// touchEach's, key by key, exactly (FuzzTouch).
func (l *LRU) Touch(keys []uint64) { l.touch(keys, len(keys)) }

// TouchHeld is Touch, and it reports how many of keys[from:], from the
// first, are held: a lookup of a chain's blocks past from (those HBM did
// not hit) and its touch, in one walk. from is at most len(keys).
func (l *LRU) TouchHeld(keys []uint64, from int) int {
	if l.isCold(keys) {
		return 0 // none held (cold.go)
	}
	if n, ok := l.heldAgain(keys, from); ok {
		return n // as the last TouchHeld left it (cold.go)
	}
	n := l.moveRuns(keys, from)
	l.noteHeld(keys, from, n)
	return n
}

// touch is Touch and TouchHeld: it moves the runs of keys, from the
// first, below one another, and puts them at the most recent end.
func (l *LRU) touch(keys []uint64, from int) int {
	if l.isCold(keys) {
		return 0 // none held (cold.go)
	}
	return l.moveRuns(keys, from)
}

// moveRuns is touch past its cold chain's test: keys are not the cold
// chain (Store's, whose insert just ended it if they were).
func (l *LRU) moveRuns(keys []uint64, from int) int {
	l.ver++
	l.from, l.miss = from, len(keys)
	epoch := l.nextEpoch() // marks the keys moved, so a duplicate is skipped
	nodes := l.nodes
	// The runs moved, linked most recent first: top is the most recent
	// node, bottom the least recent.
	top, bottom := nil32, nil32
	marked := false // coldScan marked every key
	for j := 0; j < len(keys); {
		first, ok := l.index.Get(keys[j])
		j++
		if !ok {
			l.missed(j - 1)
			// The keys after a miss are mostly misses too (a chain's
			// blocks not stored yet, a cold chain's): the index skips
			// them to the next held one in one call.
			var n int
			if j == 1 {
				n, marked = l.coldScan(keys)
			} else {
				n = l.index.Missing(keys[j:])
			}
			if n > 0 {
				if m := max(j, l.from); m < j+n {
					l.missed(m)
				}
				j += n
			}
			continue
		}
		if top != nil32 && l.moved(first, epoch) { // none is moved before the first run
			continue
		}
		nodes[first].mark = epoch
		// The run's ends in the list, low the less recent.
		low, high := first, first
		up, walked := false, true
		if sg := nodes[first].seg; sg != 0 && (l.segs[sg-1].epoch != epoch || nodes[first].off == l.segs[sg-1].hi) {
			// The run lies in a segment: its keys are matched there. A
			// segment moves one range of places a touch, [lo, hi): a
			// second run of it is matched there if it goes on from hi
			// (keys Store put after the chain's: insertStacked).
			s, o := &l.segs[sg-1], nodes[first].off
			if m := s.segRun(keys, j-1, o, l.chained); m > 1 {
				low, j, walked = s.nodes[int(o)+m-1], j+m-1, false
				if s.epoch != epoch {
					s.epoch, s.lo = epoch, o
				}
				s.hi = o + int32(m)
				if o > 0 {
					s.brk(o - 1)
				}
				s.brk(o + int32(m) - 1)
			}
		}
		if walked {
			if j < len(keys) {
				n := nodes[first].next
				up = n != nil32 && nodes[n].anon == 0 && nodes[n].key == keys[j]
			}
			if up {
				high, j = l.run(keys, j, first, epoch, true)
			} else {
				low, j = l.run(keys, j, first, epoch, false)
			}
		}
		below, above := nodes[low].prev, nodes[high].next
		nodes[below].next = above
		nodes[above].prev = below
		hi, lo := high, low // the run's ends in touch order
		if up {
			for i := low; ; {
				n := &nodes[i]
				next := n.next
				n.prev, n.next = n.next, n.prev
				if i == high {
					break
				}
				i = next
			}
			hi, lo = low, high
		}
		// Put the run below the runs moved before it.
		if top == nil32 {
			top = hi
		} else {
			nodes[bottom].prev = hi
			nodes[hi].next = bottom
		}
		if walked {
			l.relabel(hi, lo, bottom)
		} else if bottom != nil32 {
			l.join(bottom, hi)
		}
		bottom = lo
	}
	if top != nil32 {
		tail := nodes[nil32].prev
		nodes[bottom].prev = tail
		nodes[tail].next = bottom
		nodes[top].next = nil32
		nodes[nil32].prev = top
	} else {
		l.noteCold(keys, marked) // nothing moved: none of keys is held
	}
	return max(l.miss-from, 0)
}

// moved reports whether node i was moved by the touch of epoch: walked
// (marked) or in the run its segment moved.
func (l *LRU) moved(i int32, epoch uint32) bool {
	n := &l.nodes[i]
	if n.mark == epoch {
		return true
	}
	if n.seg == 0 {
		return false
	}
	s := &l.segs[n.seg-1]
	return s.epoch == epoch && n.off >= s.lo && n.off < s.hi
}

// relabel puts the nodes of a run a touch walked, from hi down to lo as
// it stacked them, into a segment: the one whose last place is above,
// the node just above hi (nil32 if none), or a new one.
func (l *LRU) relabel(hi, lo, above int32) {
	sg := int32(0)
	if above != nil32 {
		if a := &l.nodes[above]; a.seg != 0 && int(a.off) == len(l.segs[a.seg-1].keys)-1 {
			sg = a.seg
		}
	}
	if sg == 0 {
		sg = l.newSeg()
	}
	l.label(hi, lo, sg)
}

// join notes that node lo, a run's last, now lies just above node hi,
// the next run's first, which the touch matched in a segment: when they
// are one segment's places t and t+1, the break between them is mended,
// so that the next touch matches the two runs as one (a chain whose new
// keys Store put in a segment's places after its last: insertStacked).
func (l *LRU) join(lo, hi int32) {
	a, b := &l.nodes[lo], &l.nodes[hi]
	if a.seg != 0 && a.seg == b.seg && b.off == a.off+1 {
		s := &l.segs[a.seg-1]
		s.breaks[a.off>>6] &^= 1 << (a.off & 63)
	}
}

// missed notes that keys[j] of the touch is not held.
func (l *LRU) missed(j int) {
	if j >= l.from && j < l.miss {
		l.miss = j
	}
}

// run walks the list from node end, a key of keys moved by this Touch
// (marked epoch), down (up: up) while the nodes are keys[j], keys[j+1],
// ..., marking them. A key of keys not held, or a duplicate of one moved
// already, is skipped (missed notes one not held); any other key ends
// the run. It returns the run's last node and the index of the first
// key after it.
func (l *LRU) run(keys []uint64, j int, end int32, epoch uint32, up bool) (int32, int) {
	for {
		if end, j = l.match(keys, j, end, epoch, up); j == len(keys) {
			return end, j
		}
		i, ok := l.index.Get(keys[j])
		if ok && !l.moved(i, epoch) {
			return end, j
		}
		if !ok {
			l.missed(j)
		}
		j++
	}
}

// match is run's walk without the skips: it stops at the first key that
// is not the next node's.
func (l *LRU) match(keys []uint64, j int, end int32, epoch uint32, up bool) (int32, int) {
	nodes := l.nodes
	for ; j < len(keys); j++ {
		k := keys[j]
		c := nodes[end].prev
		if up {
			c = nodes[end].next
		}
		// The sentinel and anonymous runs have key 0: only a key 0 needs
		// telling them apart.
		n := &nodes[c]
		if n.key != k || k == 0 && (c == nil32 || n.anon != 0) {
			break
		}
		n.mark = epoch
		end = c
	}
	return end, j
}

// touchEach is Touch's slow twin: each held key moved to the most recent
// end, the last first.
func (l *LRU) touchEach(keys []uint64) {
	for j := len(keys) - 1; j >= 0; j-- {
		if i, ok := l.index.Get(keys[j]); ok {
			l.unlink(i)
			l.pushBack(i)
		}
	}
}

// nextEpoch starts a new epoch of the nodes' marks and returns it.
func (l *LRU) nextEpoch() uint32 {
	l.epoch++
	if l.epoch == 0 { // wrapped: clear every mark
		for i := range l.nodes {
			l.nodes[i].mark = 0
		}
		for i := range l.segs {
			l.segs[i].epoch = 0
		}
		l.guardEpoch = 0
		l.epoch = 1
	}
	return l.epoch
}

// Insert stores the keys not yet held, in order, at the most recent end
// (so the last new key is the most recent; Touch afterwards to put a
// chain's head first). Keys already held are left where they are and are
// protected: this store never evicts them, as vLLM's prepare_store
// (manager.py:139-194). To make room it evicts the least recent entries
// that are neither pinned nor protected, appends the evicted keys to
// evicted (least recent first) and returns it with the number of
// anonymous blocks evicted.
//
// If there is not enough to evict (capacity 0, or a tier full of pinned or
// protected entries), Insert is refused whole and changes nothing: it
// answers ok false and counts the new blocks as Dropped, as vLLM drops
// the store ("cannot store blocks", offloading/scheduler.py:677-679).
// Duplicate keys count once.
func (l *LRU) Insert(keys []uint64, evicted []uint64) (_ []uint64, anon int, ok bool) {
	l.ver++
	if l.used+len(keys) <= l.capacity {
		// Room for every key: nothing is evicted, so none needs
		// protecting, and one probe a key tells a held key and adds a
		// new one (as the node alloc gives next).
		l.reserve(len(keys))
		for _, k := range keys {
			i := int32(len(l.nodes))
			if n := len(l.spare); n > 0 {
				i = l.spare[n-1]
			}
			if _, added := l.index.Add(k, i); added {
				l.added(k)
				l.alloc()
				l.nodes[i] = node{key: k}
				l.pushBack(i)
				l.used++
			}
		}
		return evicted, 0, true
	}
	var add int
	if evicted, anon, add, ok = l.roomFor(keys, evicted, false); !ok || add == 0 {
		return evicted, anon, ok
	}
	l.reserve(add)
	for _, k := range keys {
		if _, held := l.index.Get(k); held {
			continue
		}
		i := l.alloc()
		l.nodes[i] = node{key: k}
		l.index.Put(k, i)
		l.added(k)
		l.pushBack(i)
		l.used++
	}
	return evicted, anon, true
}

// reserve makes room in the index for add more keys: when it would grow,
// it grows at once to hold eight times the keys, never more than the
// capacity (no more keyed entries fit), where the index alone doubles
// its table: a third as many rehashes, each moving fewer keys in all. A
// tier that fills ends with the table doubling would reach
// (Regime/Tiers: 262,144 slots, 4 MiB, for 52,428 blocks); on the way
// its table is at most eight times the size doubling gives. Sized from
// the capacity up front, it would take those 4 MiB a tier at once, used
// or not. Regime/Tiers (cachegrind): 14,111 instructions a request
// rehashing with doubling, 3,524 growing to four times the keys; with
// reindex, 1,833 to four times (62,013 in all), 1,573 to eight (61,764):
// its tiers, 52,428 blocks, grow at about 1,000 and 9,000 keys.
func (l *LRU) reserve(add int) {
	if n := l.index.Len() + add; n > l.room {
		l.room = min(8*n, l.capacity)
		// The nodes grow with it (a keyed entry a node, and the
		// sentinel), where append grows a long slice by a quarter, every
		// node copied at each growth: Regime/Tiers (cachegrind), 59,417
		// instructions a request so, 56,141 this way (the runtime's
		// memmove 4,208 to 1,700), each tier's nodes 2 MiB from its
		// 6,400th key.
		l.nodes = slices.Grow(l.nodes, max(l.room+1-len(l.nodes), 0))
		if len(l.spare) > 0 || l.growIndex || !l.index.Grows(l.room) {
			l.index.Reserve(l.room)
			return
		}
		l.reindex()
	}
}

// reindex is reserve's growth of a tier with no free node, whose nodes
// past the sentinel are each a keyed entry or an anonymous run: the
// index is cleared into its new table and given the keys back from the
// nodes, in runs of consecutive keyed nodes (PutNew), where the index's
// own growth moves them from the old table, reading each of its slots,
// four and more a key. Regime/Tiers (cachegrind): the index's resize
// took 3,776 instructions a request, reindex and PutNew take 1,882.
func (l *LRU) reindex() {
	l.index.Clear(l.room)
	var buf [256]uint64 // a run's keys, a bufferful at a time
	keys := buf[:0]
	first := int32(1) // keys[0]'s node
	for i := 1; i < len(l.nodes); i++ {
		n := &l.nodes[i]
		if n.anon == 0 {
			keys = append(keys, n.key)
			if len(keys) < len(buf) {
				continue
			}
		}
		l.index.PutNew(keys, first)
		keys, first = keys[:0], int32(i)+1
	}
	l.index.PutNew(keys, first)
}

// roomFor is Insert's way past its first case (no room for every key):
// the held keys of keys protected, it evicts to make room for the keys
// not held, a key given twice once, and returns how many those are (0:
// nothing to insert, nothing evicted) and makeRoom's answer (ok false:
// refused, Dropped counted). distinct says keys holds no key twice
// (a chained tier's store of a run of its chain: a key names the keys
// before it), so that no set is needed to count each new key once.
// Regime/Tiers (budget test, past its tiers' fill): 82,729 instructions
// a request with the set, 80,481 without.
func (l *LRU) roomFor(keys []uint64, evicted []uint64, distinct bool) (_ []uint64, anon, add int, ok bool) {
	l.nextEpoch()
	// add: the keys not held, a key given twice once (room is to be
	// made, or the store refused, for that many; the insert skips a
	// duplicate as held).
	var protected int
	lead := -1
	if distinct {
		add, protected, lead = l.protectRuns(keys)
	} else {
		add, protected = l.protectEach(keys)
	}
	if add == 0 {
		return evicted, 0, 0, true
	}
	evicted, anon, ok = l.makeRoom(add, protected, evicted)
	if !ok {
		if len(l.at) > 0 { // the new keys protectRuns put in, out again, and their nodes
			l.index.DelKeys(keys[len(keys)-len(l.at):])
			// Spare as it was, and the nodes past the list's slice
			// taken after its ids, if any (nothing was evicted).
			l.spare = append(l.spareUndo, l.at[min(len(l.at), len(l.spareUndo)):]...)
			l.at = nil
		}
		return evicted, 0, add, false
	}
	if lead >= 0 {
		l.known = lead + 1 // for the insert that follows (insertStacked)
	}
	return evicted, anon, add, true
}

// protectEach marks each held key of keys with the epoch (protected)
// and returns how many keys are not held, a key given twice once, and
// how many it marked that are not pinned: roomFor's loop, a lookup a
// key.
func (l *LRU) protectEach(keys []uint64) (add, protected int) {
	l.fresh.reset(len(keys))
	for _, k := range keys {
		if i, held := l.index.Get(k); held {
			n := &l.nodes[i]
			if n.mark != l.epoch {
				n.mark = l.epoch
				if n.pins == 0 {
					protected++
				}
			}
			continue
		}
		if l.fresh.add(k) {
			add++
		}
	}
	return add, protected
}

// protectRuns is protectEach for keys that hold no key twice (a
// chained tier's store of a run of its chain), found as PinHeld finds
// them: a held key's run of its segment (heldRun) marked without a
// lookup a key, and the keys not held from a key not held counted by
// the index in one call (Missing). A store's held keys mostly lead it
// as one run (a request's HBM hits), its new keys follow. Regime/Tiers
// past its tiers' fill (budget test): 78,402 instructions a request
// with a lookup a key (roomFor 6,813), 76,008 so (protectRuns 2,317,
// Missing 2,464 from 899).
//
// With no node pinned (and not the slow twin's eviction, evictEach), a
// held run of a segment is protected as a row (guards, read by
// evictRun), not by a mark a node: a store's held keys are mostly a
// request's HBM hits, many more than the few keys its eviction takes
// from the least recent end. Regime/Tiers past its tiers' fill (budget
// test): 71,450 instructions a request with a mark a node
// (protectRuns 2,430), 70,484 so (1,703; evictRun 4,829 to 4,702,
// its row's nodes not checked either). The marks are the twin:
// TestFullStoreProtectsHeldRuns holds them to it.
//
// It also returns lead, how many of keys, from the first, its first run
// held, when every key after them is new and put in the index already
// (putNew; else −1): the insert after the eviction puts only their
// nodes in (insertNew).
func (l *LRU) protectRuns(keys []uint64) (add, protected, lead int) {
	nodes, epoch := l.nodes, l.epoch
	byRows := l.pinned == 0 && !l.evictEach
	if byRows {
		l.guards, l.guardEpoch = l.guards[:0], epoch
	}
	// The new keys after the first run (or from the first key) are put
	// in the index as they are counted (putNew), unless a key held
	// follows them, the index would grow, or a slow twin's switch is on
	// (noKnown; evictEach, which deletes each key it evicts at once).
	put := !l.noKnown && !l.evictEach && !l.index.Grows(l.index.Len()+len(keys))
	for j := 0; j < len(keys); {
		i, held := l.index.Get(keys[j])
		if !held {
			if put && j == lead {
				if c, ok := l.putNew(keys[j:]); ok {
					return add + c, protected, lead
				}
				put = false
				continue // keys[j] again, by Missing
			}
			c := 1 + l.index.Missing(keys[j+1:])
			add, j = add+c, j+c
			continue
		}
		run := l.heldRun(keys, j, i)
		if n := &nodes[i]; byRows && n.seg != 0 {
			// Its row guarded, its nodes not marked: none is pinned,
			// and none is marked before (keys holds no key twice).
			l.guards = append(l.guards, guard{n.seg, n.off, n.off + int32(len(run)) - 1})
			protected += len(run)
		} else {
			for _, x := range run {
				if n := &nodes[x]; n.mark != epoch {
					n.mark = epoch
					if n.pins == 0 {
						protected++
					}
				}
			}
		}
		if j == 0 {
			lead = len(run)
		}
		j += len(run)
	}
	return add, protected, -1 // none put: a key held past the first run, or all held
}

// putNew puts keys in the index, each with a node of its own (at, for
// insertNew), if none of them is held, and reports how many it put and
// whether it did: if one is held it puts none. The nodes are the first
// spare ones, in their order there, and those past the list's slice if
// spare holds too few (nextIDs), taken before the eviction frees its own
// (which go on spare, for a later store): a tier past its fill holds
// about a hundred nodes more (Regime/Tiers: 93 to 106 on average). A
// store into a full tier counted its new keys (Missing), and its insert
// after the eviction put them in again (PutIDs), their nodes the ones
// the eviction freed: each key's home computed and probed twice. Regime/Tiers past its tiers' fill (budget test): 68,654
// instructions a request so (Missing 2,464, PutIDs 2,621), 68,542 with
// the keys put as counted and their ids set after the eviction (from
// the slots they were put in, before DelKeys moves any: 1,729 a
// request), 67,335 this way (MissingPut 2,448, putNew 1,289, Missing
// 899).
func (l *LRU) putNew(keys []uint64) (int, bool) {
	n := len(keys)
	at, took := l.nextIDs(n)
	c := l.index.MissingPut(keys, at)
	if c < n { // a key held follows
		l.index.DelKeys(keys[:c])
		return 0, false
	}
	l.spareUndo = l.spare
	l.spare = l.spare[took:]
	if took < n {
		n0 := len(l.nodes)
		l.nodes = slices.Grow(l.nodes, n-took)[:n0+n-took]
	}
	l.at = at
	return n, true
}

// nextIDs returns the ids of the n nodes a full store's new keys take
// (putNew, storeFused) and how many of them are spare ones: spare's
// first n, the least recently freed, read where they lie (a queue's
// head), if it holds as many; else all of spare's, in their order
// there, then those past the list's slice. It takes none: the store
// cuts them off spare (spare[took:]) once its keys are in the index.
// The ids an eviction then frees go on spare's end, past the ones
// taken, which stay as they are: spareRoom first makes room there for
// n more without a new array. Taken from spare's end (a stack), they
// were copied aside first, as the eviction's would fall on them:
// Regime/Tiers past its tiers' fill (budget test), 58,776 instructions
// a request so, 58,406 this way (58,338 with its common case
// written in storeFused).
func (l *LRU) nextIDs(n int) (at []int32, took int) {
	if cap(l.spare)-len(l.spare) < n {
		l.spareRoom(n)
	}
	if spare := l.spare; len(spare) >= n {
		return spare[:n:n], n
	}
	at = l.atBuf[:cap(l.atBuf)]
	if len(at) < n {
		at = make([]int32, 2*n)
		l.atBuf = at
	}
	at = at[:n]
	took = copy(at, l.spare)
	n0 := len(l.nodes)
	for y := took; y < n; y++ {
		at[y] = int32(n0 + y - took)
	}
	return at, took
}

// spareRoom moves spare's ids to the start of spareAll (a larger one if
// it lacks room for n more), so that n more go on spare's end without
// a new array: spare's first ids taken by nextIDs leave its array's
// start unused. spareAll holds at most twice the longest spare and a
// store's keys, and 64, ids; an array it outgrows is the collector's.
func (l *LRU) spareRoom(n int) {
	m := len(l.spare)
	if cap(l.spareAll) < m+n {
		l.spareAll = make([]int32, 2*(m+n)+64)
	}
	all := l.spareAll[:cap(l.spareAll)]
	copy(all, l.spare)
	l.spare = all[:m]
}

// InsertAnon stores an anonymous run of n blocks at the most recent end,
// evicting as Insert does (appending evicted keys to evicted and counting
// anonymous blocks evicted). A run is evicted block by block from its
// least recent end like any entry; it is never pinned. If there is not
// enough to evict, it is refused whole (ok false, n blocks Dropped).
// n <= 0 does nothing.
func (l *LRU) InsertAnon(n int, evicted []uint64) (_ []uint64, anon int, ok bool) {
	l.ver++
	if n <= 0 {
		return evicted, 0, true
	}
	l.nextEpoch() // no keyed entry is protected
	evicted, anon, ok = l.makeRoom(n, 0, evicted)
	if !ok {
		return evicted, 0, false
	}
	if tail := l.nodes[nil32].prev; tail != nil32 && l.nodes[tail].anon > 0 {
		l.nodes[tail].anon += int32(n) // extend the most recent run
	} else {
		i := l.alloc()
		l.nodes[i] = node{anon: int32(n)}
		l.pushBack(i)
	}
	l.used += n
	return evicted, anon, true
}

// makeRoom evicts so that add more blocks fit, or refuses (counting
// Dropped) if the evictable blocks, those neither pinned nor protected
// (marked with the current epoch), fall short.
func (l *LRU) makeRoom(add, protected int, evicted []uint64) (_ []uint64, anon int, ok bool) {
	need := l.used + add - l.capacity
	if need <= 0 {
		return evicted, 0, true
	}
	total := need
	if need > l.used-l.pinned-protected {
		l.counters.Dropped += int64(add)
		return evicted, 0, false
	}
	if l.evictEach {
		return l.makeRoomEach(need, evicted)
	}
	// The nodes evicted are not unlinked one by one: each node kept is
	// linked below the last one kept (keep, the sentinel first), and
	// the first node not reached below the last, once.
	// Nor is each taken out of its segment at once: a run of places
	// evicted one after another, each the place before the last (from
	// the least recent end, a segment's last places first), is taken
	// out as one (unlabelRun): its segment sg, places lo to hi.
	// Nor is each key deleted from the index as it is evicted: the
	// keys it appends to evicted are deleted in one call at the end
	// (keyindex's DelKeys), where a call to Del a key spilled the
	// loop's state around it. Regime/Tiers past its tiers' fill
	// (budget test): 80,715 instructions a request with a Del a key
	// (makeRoom 10,309, Del 5,679), 78,402 so (9,331, DelKeys 4,253).
	// (Split in a walk that picks the nodes and a loop that drops
	// them, or the loop's calls to unlabelRun and append's growth
	// taken out too, it took as many or more: 78,407 to 81,222.)
	// Nor is a segment's row of places evicted node by node through the
	// loop: the loop reaches its least recent place, and the places
	// before it that lie each just above the next (the row, as the walk
	// would reach them) are evicted in one call (evictRun), up to the
	// first pinned or protected. Regime/Tiers past its tiers' fill
	// (budget test): 73,984 instructions a request node by node
	// (makeRoom 9,331), 72,348 so (makeRoom 2,835, evictRun 4,830);
	// with spare a stack of ids, 71,675 with the row's keys read from
	// its segment (evictRun 5,157), 71,450 from its nodes (4,829).
	// With guards (protectRuns), a row's nodes freed by a loop that
	// checks none (freeRow), the checked one apart (evictChecked):
	// 70,403 in one loop (evictRun 4,672), 69,783 so (3,991).
	nodes, epoch, from := l.nodes, l.epoch, len(evicted)
	keep, i := nil32, nodes[nil32].next
	sg, lo, hi := int32(0), int32(0), int32(0)
	for need > 0 {
		n := &nodes[i]
		next := n.next
		switch {
		case n.anon > 0:
			keep, anon, need = l.evictAnon(i, keep, anon, need)
		case n.pins == 0 && n.mark != epoch:
			if n.seg != 0 {
				// Its run of its segment, evicted at once.
				s, off := n.seg, n.off
				var a int32
				evicted, a, next = l.evictRun(s, off, need, epoch, evicted)
				if a > off { // a store's held row (guards)
					nodes[keep].next, n.prev, keep = i, keep, i
					break
				}
				l.used -= int(off-a) + 1
				need -= int(off-a) + 1
				if s == sg && off == lo-1 {
					lo = a
				} else {
					if sg != 0 { // a row before (the first has none)
						l.unlabelRun(sg, lo, hi)
					}
					sg, lo, hi = s, a, off
				}
				break
			}
			evicted = append(evicted, n.key)
			l.release(i)
			l.used--
			need--
		default:
			nodes[keep].next, n.prev, keep = i, keep, i
		}
		i = next
	}
	l.evicted(sg, lo, hi, keep, i, evicted[from:], total)
	return evicted, anon, true
}

// evicted ends makeRoom's eviction of total blocks: the last run of
// places evicted (places lo to hi of segment sg) taken out of its
// segment, the keys evicted out of the index, and node i, the first not
// reached, linked just above keep, the last kept.
func (l *LRU) evicted(sg, lo, hi, keep, i int32, keys []uint64, total int) {
	l.unlabelRun(sg, lo, hi)
	l.index.DelKeys(keys)
	l.nodes[keep].next, l.nodes[i].prev = i, keep
	l.counters.Evictions += int64(total)
}

// evictRun evicts place off of s, whose node makeRoom found neither
// pinned nor protected (marked epoch), and the places before it that
// lie each just above the next (no break between), at most need in all,
// as makeRoom's loop evicts them one after another from the least recent
// end: up to the first pinned or protected. It appends their keys to
// evicted, in that order, frees their nodes (spare), and returns evicted, the first place it evicted and the node
// just above it (the next the loop reaches). The nodes' labels and the
// places' breaks are the caller's (unlabelRun).
func (l *LRU) evictRun(sg int32, off int32, need int, epoch uint32, evicted []uint64) (_ []uint64, first, next int32) {
	s := &l.segs[sg-1]
	a := s.rowStart(off, off+1-int32(min(need, int(off)+1)))
	if l.guardEpoch != epoch {
		return l.evictChecked(s, a, off, epoch, evicted)
	}
	// The row's places above the highest a guard holds (protectRuns).
	for _, g := range l.guards {
		if g.sg == sg && g.hi >= a && g.lo <= off {
			a = min(g.hi, off) + 1
		}
	}
	if a > off {
		return evicted, a, l.nodes[s.nodes[off]].next
	}
	// None of the row's nodes is pinned (guards: no node is) nor
	// protected: every one is evicted, by a loop of its own (freeRow),
	// which checks none. The nodes freed go on spare in place order,
	// not the order evicted (a node's id is not read but as the list's
	// and segments' link): a store takes them in that order
	// (nextIDs, insertNew), read where they lie.
	sn := s.nodes[a : off+1]
	k := len(evicted)
	evicted = slices.Grow(evicted, len(sn))[:k+len(sn)]
	next = freeRow(l.nodes, sn, evicted[k:])
	l.spare = append(l.spare, sn...)
	return evicted, a, next
}

// freeRow frees nodes sn, a segment's row of places, and copies their
// keys to ev (as long as sn), the last place's first: evictRun's loop
// with no node checked. It returns the node just above the row's first
// place. The nodes are not zeroed: a spare node is read by no one until
// a store takes it, and every store that takes one writes each field a
// keyed node reads but pins, anon and mark (linkRow), which a node
// freed here has 0, 0 (unpinned and keyed: guards) and of an epoch
// before the next (nextEpoch clears every node's at its wrap); Insert
// and InsertAnon write the whole node. Regime/Tiers past its tiers'
// fill (budget test): 67,465 instructions a request zeroing each node,
// 67,001 so.
func freeRow(nodes []node, sn []int32, ev []uint64) int32 {
	next := nodes[sn[0]].next
	ev = ev[:len(sn)]
	for x, id := range sn {
		ev[len(ev)-1-x] = nodes[id].key
	}
	return next
}

// evictChecked is evictRun for places a to off of s with nodes pinned
// or protected by marks (guards not taken): the row's nodes are
// checked, from off's, and evicted up to the first pinned or protected.
func (l *LRU) evictChecked(s *segment, a, off int32, epoch uint32, evicted []uint64) (_ []uint64, first, next int32) {
	nodes := l.nodes
	sn := s.nodes[a : off+1]
	k := len(evicted)
	evicted = slices.Grow(evicted, len(sn))
	ev := evicted[k : k+len(sn)]
	x := 0
	for ; x < len(ev); x++ {
		n := &nodes[sn[len(sn)-1-x]]
		if n.pins != 0 || n.mark == epoch {
			break // place off's is neither
		}
		ev[x] = n.key
		next = n.next
		*n = node{}
	}
	l.spare = append(l.spare, sn[len(sn)-x:]...)
	return evicted[:k+x], off + 1 - int32(x), next
}

// evictAnon is makeRoom's eviction of anonymous run i: up to need of
// its blocks evicted, from its least recent end, the node freed if none
// is left, else kept, linked just above keep, the last node kept. It
// returns keep, anon and need with them counted.
func (l *LRU) evictAnon(i, keep int32, anon, need int) (int32, int, int) {
	n := &l.nodes[i]
	if anon, need = l.takeAnon(n, anon, need); n.anon == 0 {
		l.release(i) // never labelled: a segment's places are keyed
		return keep, anon, need
	}
	l.nodes[keep].next, n.prev = i, keep
	return i, anon, need
}

// takeAnon evicts up to need blocks of anonymous run n, from its least
// recent end, and returns anon and need with them counted.
func (l *LRU) takeAnon(n *node, anon, need int) (int, int) {
	k := min(int(n.anon), need)
	n.anon -= int32(k)
	l.used -= k
	return anon + k, need - k
}

// makeRoomEach is makeRoom's loop with each node evicted unlinked.
func (l *LRU) makeRoomEach(need int, evicted []uint64) (_ []uint64, anon int, ok bool) {
	total := need
	for i := l.nodes[nil32].next; need > 0; {
		n := &l.nodes[i]
		next := n.next
		switch {
		case n.anon > 0:
			anon, need = l.takeAnon(n, anon, need)
			if n.anon == 0 {
				l.unlink(i)
				l.release(i)
			}
		case n.pins == 0 && n.mark != l.epoch:
			evicted = append(evicted, n.key)
			l.index.Del(n.key)
			l.unlink(i)
			l.release(i)
			l.used--
			need--
		}
		i = next
	}
	l.counters.Evictions += int64(total)
	return evicted, anon, true
}

// Remove drops key, as a promotion out of an exclusive tier does, and
// reports whether it did: a key not held, or pinned, is not removed.
func (l *LRU) Remove(key uint64) bool {
	l.ver++
	i, ok := l.index.Get(key)
	if !ok || l.nodes[i].pins > 0 {
		return false
	}
	l.index.Del(key)
	l.unlink(i)
	l.release(i)
	l.used--
	return true
}

// Pin marks key as being loaded (vLLM's prepare_load raises ref_cnt,
// manager.py:113-125): it is not evicted nor removed until as many Unpins.
// It reports whether key is held.
func (l *LRU) Pin(key uint64) bool {
	i, ok := l.index.Get(key)
	if !ok {
		return false
	}
	if l.nodes[i].pins == 0 {
		l.pinned++
	}
	l.nodes[i].pins++
	return true
}

// Unpin ends one Pin of key (complete_load, manager.py:130-137). It
// reports false, changing nothing, if key is not held or not pinned.
func (l *LRU) Unpin(key uint64) bool {
	i, ok := l.index.Get(key)
	if !ok || l.nodes[i].pins == 0 {
		return false
	}
	l.nodes[i].pins--
	if l.nodes[i].pins == 0 {
		l.pinned--
	}
	return true
}

// PinHeld pins keys from the first while they are held, as Pin does key
// by key up to the first that answers false, and returns how many it
// pinned: a load's keys pinned in one call (sim's host tier). A load's
// keys were just touched, each just below the one before: a key that is
// the node below the last one's is taken there, without a lookup, and
// the keys that follow it in its segment (heldRun) are pinned without a
// step down the list.
func (l *LRU) PinHeld(keys []uint64) int {
	nodes, last, pinned := l.nodes, nil32, 0 // not reloaded after each store through them
	j := 0
	for j < len(keys) {
		i, ok := below(nodes, last, keys[j])
		if !ok {
			if i, ok = l.index.Get(keys[j]); !ok {
				break
			}
		}
		run := l.heldRun(keys, j, i)
		pinned += pin(nodes, run)
		j += len(run)
		last = run[len(run)-1]
	}
	l.pinned += pinned
	return j
}

// HeldPinned reports how many of keys, from the first, are held, and
// whether one of those is pinned: Contains and Pinned key by key up to
// the first key not held or pinned (n then counts the keys before it).
// A host tier's lookup while a load is in flight asks it whether the
// request must wait for a key being loaded (sim's host tier); the keys
// are found as PinHeld finds them, a run of a segment at a time, where
// Contains and Pinned probed the index twice a key; with no key pinned
// in the tier, a run's pins are not read (a host tier's lookup counts
// its held keys by HeldPinned, sim's lazy touches: Regime/Tiers,
// cachegrind, 5,339 instructions a request reading them, 393 so).
func (l *LRU) HeldPinned(keys []uint64) (n int, pinned bool) {
	nodes, last := l.nodes, nil32
	for n < len(keys) {
		i, ok := below(nodes, last, keys[n])
		if !ok {
			if i, ok = l.index.Get(keys[n]); !ok {
				return n, false
			}
		}
		run := l.heldRun(keys, n, i)
		if l.pinned > 0 { // else none is pinned
			for x, id := range run {
				if nodes[id].pins > 0 {
					return n + x, true
				}
			}
		}
		n += len(run)
		last = run[len(run)-1]
	}
	return n, false
}

// UnpinEach unpins each of keys, as Unpin does key by key: a load's keys
// released in one call, found below one another, or along their
// segment, as PinHeld finds them.
func (l *LRU) UnpinEach(keys []uint64) {
	nodes, last, unpinned := l.nodes, nil32, 0 // not reloaded after each store through them
	for j := 0; j < len(keys); {
		i, ok := below(nodes, last, keys[j])
		if !ok {
			if i, ok = l.index.Get(keys[j]); !ok {
				j++
				continue
			}
		}
		run := l.heldRun(keys, j, i)
		unpinned += unpin(nodes, run)
		j += len(run)
		last = run[len(run)-1]
	}
	l.pinned -= unpinned
}

// pin pins each of nodes run, as Pin does, and returns how many it
// pinned that were not pinned before. Regime/Tiers (cachegrind): 65,268
// instructions a request with its loop and unpin's written in PinHeld
// and UnpinEach, 65,067 so (inlined there or not: 65,069 inlined).
func pin(nodes []node, run []int32) int {
	pinned := 0
	for _, x := range run {
		n := &nodes[x]
		if n.pins == 0 {
			pinned++
		}
		n.pins++
	}
	return pinned
}

// unpin ends a pin of each of nodes run that is pinned, as Unpin does,
// and returns how many it left with no pin.
func unpin(nodes []node, run []int32) int {
	unpinned := 0
	for _, x := range run {
		if n := &nodes[x]; n.pins > 0 {
			if n.pins--; n.pins == 0 {
				unpinned++
			}
		}
	}
	return unpinned
}

// heldRun returns the nodes of keys[j:], node i holding keys[j], that
// lie in i's segment from i's place on, each just above the next (the
// places segRun matches): at least i. A key given twice ends the run
// (a segment's places hold distinct keys).
func (l *LRU) heldRun(keys []uint64, j int, i int32) []int32 {
	n := &l.nodes[i]
	if n.seg == 0 {
		l.one[0] = i
		return l.one[:]
	}
	s := &l.segs[n.seg-1]
	return s.nodes[n.off : int(n.off)+s.segRun(keys, j, n.off, l.chained)]
}

// below returns the node just below node i (less recent) if it holds
// key: a keyed node's key is its own, so it is key's node. i nil32 is
// none.
func below(nodes []node, i int32, key uint64) (int32, bool) {
	if i == nil32 {
		return nil32, false
	}
	c := nodes[i].prev
	n := &nodes[c]
	return c, c != nil32 && n.anon == 0 && n.key == key
}

func (l *LRU) alloc() int32 {
	if n := len(l.spare); n > 0 {
		i := l.spare[n-1]
		l.spare = l.spare[:n-1]
		return i
	}
	l.nodes = append(l.nodes, node{})
	return int32(len(l.nodes) - 1)
}

func (l *LRU) release(i int32) {
	l.nodes[i] = node{}
	l.spare = append(l.spare, i)
}

func (l *LRU) unlink(i int32) {
	l.unlabel(i)
	n := &l.nodes[i]
	l.nodes[n.prev].next = n.next
	l.nodes[n.next].prev = n.prev
}

func (l *LRU) pushBack(i int32) {
	nodes := l.nodes // not reloaded after each store through it
	tail := nodes[nil32].prev
	nodes[i].prev = tail
	nodes[i].next = nil32
	nodes[tail].next = i
	nodes[nil32].prev = i
}
