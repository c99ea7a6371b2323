package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/lcp"
	"github.com/servesim/servesim/internal/tierdone"
	"github.com/servesim/servesim/kvtier"
)

// KV tiers below HBM. A replica's prefix cache lives in its HBM; when
// HBM evicts a block, the block's KV can survive below it, in the
// replica's host memory (HostTier) or in a store every replica reaches
// over the network (SharedStore), and a later request whose prefix HBM
// lost loads it back instead of recomputing it.
//
// The host tier mirrors vLLM V1's CPU KV offloading (the
// OffloadingConnector with its CPU spec, vLLM 28be48fa of 24 May 2026,
// whose rules are those of the 0.19 window; engine/tier.go has the lines):
// every full block computed is written through to it, prompt and output
// alike; it is inclusive (a load leaves the copy), evicts the least
// recently used block (kvtier.LRU), touches a request's blocks at every
// lookup, and pins the blocks of a load in flight; a hit loads
// asynchronously over the replica's host-to-device path while the batch
// computes, the request waiting outside the queue (the engine's
// Reservation.Tier) and prefilling the rest of its prompt once the load
// landed. Its loads take one CUDA stream a direction in submission order
// (vllm/v1/kv_offload/cpu/gpu_worker.py:111-118, 299-318): LinkFIFO.
//
// The shared store mirrors LMCache's remote backend (LMCache/LMCache v1):
// keys are content hashes every replica of the same model computes alike
// (CacheEngineKey; token_database.py), every replica writes its computed
// chunks through to it as to its local CPU (StorageManager.batched_put),
// a lookup walks the prompt's chunks in order through the local tier then
// the remote one (LMCacheEngine.lookup), and a remote hit is written back
// into the local CPU tier (StorageManager.get): here, into the replica's
// host tier when it has one. servesim's differences: the store's unit is
// the engine's block, not LMCache's 256-token chunk; its loads are
// asynchronous like the host tier's, where vLLM's LMCache connector loads
// inside the step that schedules the request (load_kv_async False), so a
// step's price never changes; and it evicts least recently used blocks,
// where LMCache's own server has no evictor and Redis-like backends
// evict by their own policy.
//
// Costs go through the existing seams: a load's bytes are the tokens it
// restores × the tier's KVBytesPerToken, moved over the tier's Link
// (transfer.go's model: latency, bandwidth, FIFO or fair sharing); the
// request cannot run until every part of its load landed.

// HostTier is each replica's KV offload to host memory. The zero value
// is none; any field set declares one (Blocks 0 then is a tier with no
// room: every store is dropped, which runs exactly as no tier).
type HostTier struct {
	// Blocks is the tier's size in KV blocks of the replica's BlockSize.
	// vLLM declares it as --kv-offloading-size in GiB over every
	// tensor-parallel rank: Blocks = GiB × 2³⁰ / (BlockSize ×
	// KVBytesPerToken × ranks); Atlas TP4 (80 KiB a token on each of 4
	// ranks, blocks of 16): 64 GiB is 13,107 blocks.
	Blocks int
	// Link is the host-to-device path of one accelerator (each rank
	// loads its own shard over its own PCIe link, all at once). Its zero
	// value is an instantaneous link; PCIe Gen5 x16 is about 64 GB/s a
	// direction (nominal). LinkFIFO is vLLM's order.
	Link Link
	// KVBytesPerToken is the KV one token takes on each accelerator: a
	// load of n tokens moves n × KVBytesPerToken over Link. 0 means
	// Atlas's, costmodel.AtlasKVBytesPerToken (80 KiB).
	KVBytesPerToken float64
}

// On reports whether a host tier is declared.
func (h HostTier) On() bool { return h != HostTier{} }

func (h HostTier) kvBytes() float64 {
	if h.KVBytesPerToken == 0 {
		return costmodel.AtlasKVBytesPerToken
	}
	return h.KVBytesPerToken
}

// SharedStore is a KV store every replica of the fleet reaches over one
// network link (LMCache's remote backend). The zero value is none; any
// field set declares one (Blocks 0: a store with no room).
type SharedStore struct {
	// Blocks is the store's size in KV blocks of the fleet's BlockSize
	// (every replica's must be the same: the keys depend on it), each
	// block every rank's shard of it.
	Blocks int
	// Link is the network path every replica's loads share: one link for
	// the fleet (LinkFair shares it among the loads in flight, as
	// concurrent reads of one store do; LinkFIFO serves them in turn).
	// Its zero value is an instantaneous link; 100 GbE is 12.5 GB/s.
	Link Link
	// KVBytesPerToken is the bytes one token's KV moves over Link: every
	// rank's shard (the store holds the whole block). 0 means Atlas
	// TP4's, 4 × costmodel.AtlasKVBytesPerToken (320 KiB).
	KVBytesPerToken float64
}

// On reports whether a shared store is declared.
func (s SharedStore) On() bool { return s != SharedStore{} }

func (s SharedStore) kvBytes() float64 {
	if s.KVBytesPerToken == 0 {
		return 4 * costmodel.AtlasKVBytesPerToken
	}
	return s.KVBytesPerToken
}

// validateTiers checks the fleet's tiers against the configuration c.
func (f Fleet) validateTiers(c Config) error {
	if !f.HostTier.On() && !f.SharedStore.On() {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	for _, x := range []struct {
		name   string
		on     bool
		blocks int
		link   Link
		kv     float64
	}{
		{"HostTier", f.HostTier.On(), f.HostTier.Blocks, f.HostTier.Link, f.HostTier.KVBytesPerToken},
		{"SharedStore", f.SharedStore.On(), f.SharedStore.Blocks, f.SharedStore.Link, f.SharedStore.KVBytesPerToken},
	} {
		if !x.on {
			continue
		}
		if x.blocks < 0 || x.blocks > kvtier.MaxBlocks {
			bad("Fleet.%s.Blocks must be in [0, %d] (0 is a tier with no room), got %d", x.name, kvtier.MaxBlocks, x.blocks)
		}
		if err := x.link.validate("Fleet." + x.name + ".Link"); err != nil {
			errs = append(errs, err)
		}
		if !(x.kv >= 0 && x.kv <= MaxKVBytesPerToken) {
			bad("Fleet.%s.KVBytesPerToken must be a number of bytes in [0, MaxKVBytesPerToken = 2³⁰] (0 means Atlas's), got %v", x.name, x.kv)
		}
	}
	if f.Prefill.On() {
		bad("Fleet.HostTier and Fleet.SharedStore are not modelled with a prefill pool (Fleet.Prefill): declare one or the other")
	}
	if c.DetectWarmup {
		bad("Window.DetectWarmup is not supported with Fleet.HostTier or Fleet.SharedStore: the tiers' summary counts records as they end, before the warm-up is known; declare Window.Warmup")
	}
	block := 0
	for i, r := range c.replicas() {
		e := r.Engine.WithDefaults()
		if e.DisablePrefixCache {
			bad("Fleet.Replicas[%d].Engine.DisablePrefixCache: a KV tier is keyed by the prefix cache's content keys; turn the cache on or the tier off", i)
		}
		if f.SharedStore.On() && block != 0 && e.BlockSize != block {
			bad("Fleet.SharedStore: every replica must have one BlockSize (the store's keys depend on it); replica %d has %d, replica 0 %d", i, e.BlockSize, block)
		}
		block = e.BlockSize
	}
	return errors.Join(errs...)
}

// tiers is the runner's state of the fleet's tiers: each replica's host
// tier and link, the shared store and its link, and the tallies.
type tiers struct {
	r      *runner
	host   []hostTier // per replica; nil without a host tier
	shared *kvtier.LRU
	link   transfers // the shared store's
	gen    uint32
	armed  time.Duration
	ports  []tierPort

	kvHost, kvShared     float64
	hostLink, sharedLink Link
	landing              int32    // the request Land is landing now (its Release promotes), -1 none
	landed               []int32  // scratch for transfers.land
	warmKeys             []uint64 // scratch for a warm prompt's keys (runner.warm)

	// Measured requests' loads landed and the wait of each (loads), and
	// their records' tallies as they end (count).
	loads    int
	loadWait sample
	counted  tierCounts
	// Blocks every load moved from each tier, landed or cancelled part
	// way (the tests' conservation of bytes).
	movedHost, movedShared int64
}

// hostTier is one replica's host tier and its host-to-device link.
type hostTier struct {
	lru   *kvtier.LRU
	link  transfers
	gen   uint32
	armed time.Duration
}

// tierPort is replica rep's engine.Tier: the host tier then the shared
// store, in that order, as LMCache's lookup walks its backends.
type tierPort struct {
	t     *tiers
	rep   int
	block int
	// The keys this replica is loading, by count (vLLM's
	// _blocks_being_loaded): loads counts them all; loading holds each
	// one's count when counted, as it is with a shared store. With a host
	// tier alone the host tier's pins are those counts (only this port's
	// loads pin it): loading is then its slow twin (TestHostPinsCountLoads).
	loads   int
	counted bool
	loading map[uint64]int32
	evicted []uint64
	host    *kvtier.LRU // t.host[rep].lru, nil without a host tier: read at every store and lookup
	// The requests whose host keys are loading but not pinned yet
	// (lazy pins, pinPending), with a host tier alone unless eager.
	unpinned []int32
	eager    bool
	// The touches not made yet (lazy touches, touchLog), with a host
	// tier alone whose loads are not counted, unless lazy is false.
	lazy    bool
	touches touchLog
	found   foundMemo // the last lookup's held keys (lazy touches, no load in flight)
	pend    pendingDecodes
	// settleEach turns quickSettle off (twins.settleEach).
	settleEach bool
	// A bound on the places the host tier's keys moved or were put
	// above others by (idlePins): since is its value at the first load
	// not pinned yet; pinEach turns idlePins off (twins.pinEachEvict).
	moved, since int
	pinEach      bool
	pinsSkipped  int // the stores that left loads unpinned (the tests' measure)
}

// countLoads makes every port count its loads by key (the slow twin of
// the host tier's pins; a test's switch).
var countLoads = false

// Lazy pins: a host tier's pins read only when a reader needs them.
//
// A port with a host tier alone pins a load's keys in the tier (Load)
// and unpins them when it lands (Release); between the two, the pins are
// read only by a lookup that asks whether a key it would load is being
// loaded (Find's HeldPinned, while a load is in flight), by an eviction
// (which skips pinned keys: a Store with more new keys than the tier
// has room for) and by isLoading. Nothing else in the tier reads them:
// a touch, an insert with room and what is held do not. So a load's
// keys are pinned only when one of those comes (pinPending), and a load
// that lands first releases nothing: it pinned nothing. The tier holds
// every key of a load, which Find just found held (the engine's Load
// follows its Find in the same plan). Regime/Tiers (cachegrind): a
// load's 238 keys pinned and unpinned one node at a time took about
// 2,900 instructions a request. The slow twin pins at Load (eagerPins:
// TestLazyPinsAreEager).

// eagerPins makes a port with a host tier alone pin a load's keys at
// Load (the slow twin of lazy pins; a test's switch).
var eagerPins = false

// unchainedTiers makes every tier compare its runs as memory, not by
// single keys (kvtier's Config.Chained false: the slow twin of chained
// runs; a test's switch).
var unchainedTiers = false

// newTiers is the runner's state of cfg's tiers, nil without any; it
// gives every replica's engine its port.
func newTiers(cfg Config, r *runner) (*tiers, error) {
	f := cfg.Fleet
	if !f.HostTier.On() && !f.SharedStore.On() {
		return nil, nil
	}
	t := &tiers{r: r, kvHost: f.HostTier.kvBytes(), kvShared: f.SharedStore.kvBytes(),
		hostLink: f.HostTier.Link, sharedLink: f.SharedStore.Link, landing: -1, armed: Never}
	// The engines' keys are chained (engine.BlockKeys): every tier
	// matches its runs by single keys (kvtier's Config.Chained).
	chained := !unchainedTiers
	if f.SharedStore.On() {
		t.shared, _ = kvtier.New(kvtier.Config{Blocks: f.SharedStore.Blocks, Chained: chained})
		t.link = newTransfers(f.SharedStore.Link, r.opens, r.closes)
	}
	if f.HostTier.On() {
		t.host = make([]hostTier, len(r.reps))
		for i := range t.host {
			t.host[i].lru, _ = kvtier.New(kvtier.Config{Blocks: f.HostTier.Blocks, Chained: chained})
			t.host[i].link = newTransfers(f.HostTier.Link, r.opens, r.closes)
			t.host[i].armed = Never
		}
	}
	t.ports = make([]tierPort, len(r.reps))
	for i := range r.reps {
		p := &t.ports[i]
		*p = tierPort{t: t, rep: i, block: r.reps[i].eng.Config().BlockSize, loading: map[uint64]int32{},
			counted: f.SharedStore.On() || countLoads, eager: eagerPins, settleEach: r.tw.settleEach, pinEach: r.tw.pinEachEvict}
		p.lazy = !p.counted && !f.SharedStore.On() && !eagerTouches
		if t.host != nil {
			p.host = t.host[i].lru
		}
		if err := r.reps[i].eng.SetTier(p); err != nil {
			return nil, fmt.Errorf("sim: replica %d: %w", i, err)
		}
		r.reps[i].tiered, r.reps[i].async = true, true
	}
	return t, nil
}

// Private reports whether only this port's replica calls its tiers: a
// host tier alone (engine.PrivateTier), whose replica's runs then hand it
// their stores as they are synced. A shared store is every replica's.
func (p *tierPort) Private() bool { return p.t.shared == nil }

// hostLRU is the replica's host tier, nil without one.
func (p *tierPort) hostLRU() *kvtier.LRU { return p.host }

// Store writes a request's computed blocks through to every tier, each
// a store of its own; it reports the host tier's answer (the shared
// store's without one).
func (p *tierPort) Store(keys, chain []uint64) bool {
	if p.t.shared == nil { // a host tier alone: its store, without storeIn's call
		h := p.host
		if h.Len()+p.pend.keys+len(keys) > h.Capacity() { // the store may evict, which skips pinned keys and reads the order
			// Past the tier's fill every store comes here, and most
			// find no load to pin and no touch noted (quickSettle); a
			// load not pinned yet whose keys the store cannot reach
			// stays so (idlePins).
			if len(p.unpinned) > 0 && !p.pinsIdle(h, len(keys)) {
				p.pinPending()
			}
			if p.touches.nlive > 0 || p.settleEach {
				p.settle()
			}
		} else if p.lazy {
			// Its touch of chain noted, not made (lazy touches): the
			// new keys inserted where Store puts them for its touch
			// (InsertChain: a decode's block just below the chain's
			// key before it), as the noted touch moves them again; a
			// decode's block put off (pendingDecodes).
			if len(keys) == 1 && p.deferDecode(keys[0], chain) {
				return true
			}
			p.flushIn(chain)
			n := h.Len()
			p.evicted, _, _ = h.InsertChain(keys, chain, p.evicted[:0])
			p.moved += len(keys)
			if h.Len() > n {
				p.noteTouch(chain, len(chain)-len(keys)-1, len(chain)-1)
			}
			return true // room for every key
		}
		var ok bool
		p.evicted, _, ok = h.Store(keys, chain, p.evicted[:0])
		p.moved += len(keys) + len(chain)
		return ok
	}
	ok := true
	if h := p.hostLRU(); h != nil {
		ok = p.storeIn(h, keys, chain)
	}
	if s := p.t.shared; s != nil {
		if sok := p.storeIn(s, keys, chain); p.hostLRU() == nil {
			ok = sok
		}
	}
	return ok
}

// storeIn is one tier's store of keys, as vLLM's prepare_store and the
// touch after it (kvtier.LRU.Store): the keys it holds are kept, the new
// ones inserted (or the store refused whole), and when something new was
// stored the request's chain is touched.
func (p *tierPort) storeIn(l *kvtier.LRU, keys, chain []uint64) bool {
	var ok bool
	p.evicted, _, ok = l.Store(keys, chain, p.evicted[:0])
	return ok
}

// Find walks keys after the HBM hits through the host tier then the
// shared store, stopping at the first block neither holds; a block this
// replica is loading for another request makes the request wait. It
// touches the request's keys in both.
func (p *tierPort) Find(keys []uint64, hbm int) (int, bool) {
	h, s := p.hostLRU(), p.t.shared
	if s == nil && !p.counted {
		// A host tier alone, whose pins are this replica's loads: the
		// request waits if a held key of the loop below is pinned
		// (HeldPinned, with a load in flight), and the tier's touch
		// walks the keys and counts the held ones (the loop's n) as it
		// goes. The loop is the twin (countLoads).
		if p.lazy {
			// The held keys counted without the touch, which is noted
			// (lazy touches).
			p.flushIn(keys)
			n := 0
			if hbm < len(keys) && h.Contains(keys[hbm]) { // else none held: none pinned
				if p.loads > 0 {
					p.pinPending()
					var busy bool
					if n, busy = h.HeldPinned(keys[hbm:]); busy {
						return 0, true
					}
				} else if n = p.found.held(h, keys, hbm); n < 0 {
					n, _ = h.HeldPinned(keys[hbm:]) // none is pinned: no load in flight
					p.found.note(h, keys, hbm, n)
				}
			}
			p.noteTouch(keys, len(keys)-1, len(keys)-2)
			return n, false
		}
		if p.loads > 0 && hbm < len(keys) && h.Contains(keys[hbm]) { // else none held: none pinned
			p.pinPending()
			if _, busy := h.HeldPinned(keys[hbm:]); busy {
				return 0, true
			}
		}
		return h.TouchHeld(keys, hbm), false
	}
	n := 0
	for _, k := range keys[hbm:] {
		if !(h != nil && h.Contains(k) || s != nil && s.Contains(k)) {
			break
		}
		if p.loads > 0 && p.isLoading(k) {
			return 0, true
		}
		n++
	}
	if h != nil {
		h.Touch(keys)
	}
	if s != nil {
		s.Touch(keys)
	}
	return n, false
}

// Lazy touches: a host tier's touches made only when the order is read.
//
// A host tier's order, least recently used first, is read only when it
// evicts (a store with more new keys than it has room for): what it
// holds, pins and every answer but which key is evicted do not depend on
// it. A touch puts a chain's held keys at the most recent end, so after
// a sequence of touches and inserts each key lies where the last of them
// that moved it put it: one that is followed, before any eviction, by a
// touch of a chain that holds all of its keys (a request's chain one
// block longer, its next store's; the same chain, its lookup at the next
// plan) moves nothing that the later one does not move again, and the
// keys it does not move keep their order either way. A port with a host
// tier alone (loads not counted) therefore notes its touches in order
// (touchLog), drops one a later touch covers (noteTouch: the note whose
// chain is the new chain less a store's new keys, or the same chain, or
// the new chain less its last key), and
// makes the ones left, in order,
// before a store that may evict (settle). A store's new keys are
// inserted at once (what is held is read at once), where Store puts
// them for its touch (kvtier.LRU.InsertChain): the noted touch, or one
// after it, moves each of them again, as it moves what a touch of their
// own moved. Find counts the
// held keys without touching (HeldPinned), as TouchHeld counts them.
// Regime/Tiers never evicts from its host tiers, and its decode blocks'
// stores each touched a chain of about 300 keys. The slow twin touches
// at once (eagerTouches: TestLazyTouchesAreEager).
//
// A note is found by its last key, and the new chain's key at that place
// is all that is compared: a port's keys are the engine's content keys,
// chained (a block's key mixes its parent's, engine.BlockKeys), so that
// one key names every key before it, as the engine's prefix cache takes
// a key to name its prefix. Regime/Tiers, budget test (the runtime's
// work for servesim counted): 70,772 instructions a request comparing
// the chains whole (lcp.Len, about 11,000 of them the runtime's memory
// compares), 60,047 so.

// foundMemo is a host tier's last lookup with no load in flight (Find,
// lazy touches): a waiting request's chain, by its length and last key
// (chained keys: the last names the chain), from hbm, and the n keys from
// there it found held. Held keys leave the tier only when it evicts
// (with a host tier alone, nothing removes one), and the run of held keys
// grows only when the key after it, miss, is stored: while neither
// happened, and no load pins a key, the same lookup finds n again. A
// waiting head is looked up at every step's plan of a run (lookHead)
// while the running requests store other chains' blocks: Regime/Tiers
// (cachegrind, SERVESIM_BUDGET_FUNCS), 52,372 instructions a request with
// HeldPinned's walk of each lookup's chain (compared along its segments
// as memory, twice where a run ends in a mismatch), 50,238 so. The slow
// twin is the walk (eagerTouches: TestLazyTouchesAreEager, which
// requires lookups remembered).
type foundMemo struct {
	n, hbm, len int
	last, miss  uint64 // the chain's last key; the first not held, if n < len−hbm
	evictions   int64  // the tier's evictions when noted
	ok          bool
}

// held is the memo's n for the lookup of keys from hbm in h, or −1 if it
// does not know.
func (m *foundMemo) held(h *kvtier.LRU, keys []uint64, hbm int) int {
	if !m.ok || m.len != len(keys) || m.hbm != hbm || m.last != keys[len(keys)-1] || m.evictions != h.Counters().Evictions {
		return -1
	}
	if hbm+m.n < len(keys) && h.Contains(m.miss) {
		return -1 // stored since
	}
	return m.n
}

// note makes the lookup of keys from hbm, which found n held in h, the
// memo's.
func (m *foundMemo) note(h *kvtier.LRU, keys []uint64, hbm, n int) {
	*m = foundMemo{n: n, hbm: hbm, len: len(keys), last: keys[len(keys)-1], evictions: h.Counters().Evictions, ok: true}
	if hbm+n < len(keys) {
		m.miss = keys[hbm+n]
	}
}

// eagerTouches makes every port touch at once (the slow twin of lazy
// touches; a test's switch).
var eagerTouches = false

// touchLog is the touches a port has not made yet, in order: a list of
// notes, the oldest first, each note's keys in a buffer of its own, so
// that a note that covers another takes that one's place and buffer,
// appends its keys past them (a decode's one) and moves to the end of
// the list, instead of copying the chain. A note is freed only when the
// log is settled, so the list's nodes never outlive their slots' hints.
//
// The notes were a slice in order, a covered one marked dead and its
// buffer handed to a new note appended at the end, the slice compacted
// when the dead outnumbered the live: Regime/Tiers (cachegrind,
// SERVESIM_BUDGET_FUNCS), noteTouch 3,422 instructions a request so, 2,405
// as a list whose notes hold their buffers (44,942 to 44,109 in all).
// A store's note looks first for the chain before its new keys (a
// decode's, one key shorter), a lookup's for its own chain.
type touchLog struct {
	notes []touchNote // notes[0] is the list's sentinel: its next the oldest note, its prev the newest
	free  [][]uint64  // buffers no note holds
	last  []int32     // by a hash of its last key (touchSlot), a note's index (a hint: the note is checked; 0 none)
	set   []int32     // the slots of last set since it was cleared (setLast), each once
	live  int         // the keys of the notes
	nlive int         // the notes
	bound int         // the live keys it holds at most
}

// touchNote is a touch noted: of keys, in a buffer of its own, between
// prev and next in the list.
type touchNote struct {
	keys       []uint64
	prev, next int32
	pend       int32 // its last keys not inserted in the tier yet (pendingDecodes)
	// Its request left for good and its keys put off are its own: they
	// go in as anonymous blocks (Finished).
	done bool
	skip int32 // at a settle, its first keys a later note touches again (coverLater)
}

// touchSlots is the number of notes the log finds by their last key, a
// power of two: a note no slot finds is never dropped, only made
// (settle). A test lowers it.
var touchSlots = 1024

// touchSlot is the slot of a note whose last key is key.
func (g *touchLog) touchSlot(key uint64) int {
	return int((key*keyMul)>>32) & (len(g.last) - 1)
}

// setLast sets slot x of last to note i (not 0), noting the slot when
// it was clear.
func (g *touchLog) setLast(x int, i int32) {
	if g.last[x] == 0 {
		g.set = append(g.set, int32(x))
	}
	g.last[x] = i
}

// clearLast clears the slots of last: those set since it was last
// cleared, one by one, or all at once when they are more than an eighth.
// A settle cleared all 1,024 twice (coverLater's scratch, and the
// notes gone), where a few are set between settles: past its host
// tiers' fill, where every store that evicts settles first,
// Regime/Tiers (SERVESIM_BENCH_SCALE=4, between 2,000 and 4,000
// requests) cleared 34,468 times a run, the runtime's memclr about
// 10,000 instructions a request. clearWhole is its slow twin.
func (g *touchLog) clearLast() {
	if clearWhole || len(g.set) > len(g.last)/8 {
		clear(g.last)
	} else {
		for _, x := range g.set {
			g.last[x] = 0
		}
	}
	g.set = g.set[:0]
}

// clearWhole makes clearLast clear every slot (a test's switch).
var clearWhole = false

// touchLogKeys bounds a log's live keys, as does its tier's capacity
// (but not under 1,024): past the bound the log is settled. A log of as
// many keys as its tier holds blocks takes 8 bytes a block, where the
// tier's nodes and index take 80 and more.
var touchLogKeys = 1 << 16 // a test lowers it

// touchLogNotes bounds a log's live notes, each a buffer of its own
// (a sanity bound: chains of a few blocks only reach it).
const touchLogNotes = 1 << 10

// noteTouch notes a touch of chain, dropping a note it covers: the one
// of chain's first c0+1 keys, or else of its first c1+1 (each −1: none).
// A store's chain covers the chain before its new keys (c0, a decode's
// one block back); a lookup's, the same chain looked up before.
func (p *tierPort) noteTouch(chain []uint64, c0, c1 int) {
	if len(chain) == 0 {
		return
	}
	g := &p.touches
	if g.last == nil {
		g.last = make([]int32, touchSlots)
		g.notes = append(g.notes[:0], touchNote{})
		g.bound = min(touchLogKeys, max(1<<10, p.host.Capacity()))
	}
	if g.live+len(chain) > g.bound || g.nlive >= touchLogNotes {
		p.settle()
	}
	i := g.covered(chain, c0)
	if i == 0 && c1 != c0 {
		i = g.covered(chain, c1)
	}
	if i > 0 {
		if g.notes[i].done {
			panic(doneStored)
		}
		g.extend(i, chain)
		return
	}
	var buf []uint64
	if n := len(g.free); n > 0 {
		buf, g.free = g.free[n-1], g.free[:n-1]
	}
	if cap(buf) < len(chain) {
		// Room for twice the chain: the later notes that cover
		// it append their keys (a decode's block at a time), where
		// a buffer of the chain's size grew at the first:
		// Regime/Tiers (cachegrind), 50,238 instructions a request
		// so, 49,941 this way.
		buf = make([]uint64, 0, 2*len(chain))
	}
	i = int32(len(g.notes))
	head := &g.notes[0]
	last := head.prev
	head.prev = i
	g.notes = append(g.notes, touchNote{keys: append(buf, chain...), prev: last})
	g.notes[last].next = i
	g.setLast(g.touchSlot(chain[len(chain)-1]), i)
	g.live += len(chain)
	g.nlive++
}

// extend makes note i, which chain covers, chain's note: its keys past
// the note's appended, and the note moved to the end of the list.
func (g *touchLog) extend(i int32, chain []uint64) {
	nt := &g.notes[i]
	if len(nt.keys) == len(chain) {
		// The same chain (a lookup's again, a prompt's store after its
		// lookup), found by its last key's slot: it only moves.
		g.toEnd(i)
		return
	}
	g.live += len(chain) - len(nt.keys)
	if c := len(nt.keys) - 1; c+2 == len(chain) { // a decode's block: one more key
		nt.keys = append(nt.keys, chain[c+1])
	} else {
		nt.keys = append(nt.keys, chain[c+1:]...)
	}
	g.toEnd(i)
	g.setLast(g.touchSlot(chain[len(chain)-1]), i)
}

// toEnd moves note i to the end of the list.
func (g *touchLog) toEnd(i int32) {
	if head := &g.notes[0]; head.prev != i {
		nt := &g.notes[i]
		g.notes[nt.prev].next, g.notes[nt.next].prev = nt.next, nt.prev
		nt.prev, nt.next = head.prev, 0
		g.notes[head.prev].next, head.prev = i, i
	}
}

// covered is the note of chain's first c+1 keys, found by its last key's
// slot, or 0 if none is (or c is −1).
func (g *touchLog) covered(chain []uint64, c int) int32 {
	if c < 0 {
		return 0
	}
	i := g.last[g.touchSlot(chain[c])]
	if i == 0 {
		return 0
	}
	if keys := g.notes[i].keys; len(keys) == c+1 && keys[c] == chain[c] { // one key names the keys before it
		return i
	}
	return 0
}

// settle makes the noted touches, in order, and empties the log.
//
// quickSettle: a store that may evict settles first (Store), which past
// a host tier's fill is every store, and most find the log empty since
// the last (the touches noted are a waiting request's lookups'): a
// store does not call settle then, nor pinPending with no load to pin,
// and a settle of one note does not look for later notes covering it
// (coverLater). What settle did with no note (coverLater's and its own
// clears of the slots, none set; the sentinel cleared; no touch) changed
// nothing, and with one note coverLater left its skip 0. Regime/Tiers
// past its fill (budget test, SERVESIM_BUDGET_FUNCS): 86 % of those
// settles found no note and 12 % one; 66,838 instructions a request
// settling at every such store (settle 868, coverLater 569, the
// runtime's memclr 338), 64,947 so. The slow twin settles always, through coverLater
// (twins.settleEach: TestQuickSettleIsSettle).
func (p *tierPort) settle() {
	g := &p.touches
	if len(g.notes) == 0 {
		return
	}
	p.moved += g.live // every key its touches move or its inserts put (idlePins)
	if !touchWhole && (g.nlive > 1 || p.settleEach) {
		g.coverLater() // one note has no later note to cover it (quickSettle)
	}
	for i := g.notes[0].next; i != 0; i = g.notes[i].next {
		nt := &g.notes[i]
		keys := nt.keys
		if nt.done {
			keys = p.insertDone(nt)
		} else if nt.pend > 0 {
			p.insertPending(nt)
		}
		if skip := int(nt.skip); skip < len(keys) {
			p.host.Touch(keys[skip:])
		} // else nothing to move (an empty touch would begin a cold chain: kvtier's noteCold)
		g.free = append(g.free, nt.keys[:0])
	}
	p.pend.reset()
	clear(g.notes) // the buffers are free's
	g.notes, g.live, g.nlive = g.notes[:1], 0, 0
	g.clearLast()
}

// A settle's touches of keys touched again later.
//
// A touch moves its held keys to the most recent end and leaves the
// order of every other key as it was, so that after a sequence of
// touches with no read of the order between, a key lies where the last
// touch that moved it put it: an earlier touch moving it too changes
// nothing the later one leaves. A settle makes its notes' touches in
// order, and a note's first keys are mostly a group's shared prefix,
// which a later note of the same group touches again: coverLater finds,
// for each note, the later note with the same first key nearest it, and
// how many first keys the two share (lcp.Chain: by one key at a time,
// the last first, then halving; chained keys, one names the keys before
// it), which the note's touch skips. (Its keys put off, its last, are in no other note.)
// Regime/Tiers (budget test, SERVESIM_BUDGET_FUNCS): 40,096 to 40,226
// instructions a request in three runs touching every note whole,
// 39,403 and 39,507 in two so (memeqbody 2,103 to 1,578, moveRuns 553
// to 367; coverLater 232). A note none of whose keys is left to touch is
// not touched: an empty touch begins a cold chain (kvtier's noteCold),
// which every insert then tests its keys against (insertStacked 583 to
// 1,411). The slow twins touch every note whole (touchWhole) or at once
// (TestLazyTouchesAreEager, TestFinishedBlocksGoInAnonymous).

// touchesSkipped counts the keys settles did not touch (coverLater: the
// tests' measure that some are not; atomic, as the parallel tests
// that run tiers add to it at once).
var touchesSkipped atomic.Int64

// touchWhole makes every settle touch each note's keys whole (the slow
// twin of coverLater; a test's switch).
var touchWhole = false

// coverLater sets each note's skip: how many of its first keys the
// nearest later note with the same first key touches again. It uses the
// slots of last keys as scratch (settle clears them after).
func (g *touchLog) coverLater() {
	g.clearLast()
	for i := g.notes[0].prev; i != 0; i = g.notes[i].prev {
		nt := &g.notes[i]
		nt.skip = 0
		if len(nt.keys) == 0 {
			continue
		}
		x := g.touchSlot(nt.keys[0])
		if j := g.last[x]; j != 0 {
			if later := g.notes[j].keys; later[0] == nt.keys[0] {
				nt.skip = int32(min(lcp.Chain(nt.keys, later), len(nt.keys)-int(nt.pend)))
				touchesSkipped.Add(int64(nt.skip))
			}
		}
		g.setLast(x, i)
	}
}

// Decode blocks put off: a host tier alone's decode stores inserted when
// something could read them.
//
// With lazy touches a decode's store inserts its one block into the tier
// (InsertChain, below its chain's key before it) and extends the note of
// its chain by it; the tier reads the block's place only when the noted
// touch moves it (settle), and whether it is held only when a lookup or
// a store is given a chain that holds it: the request's own chain, its
// blocks' keys being its own (engine.Tier). So a decode's block not held,
// whose chain less it is a note (covered), is only appended to that note
// (noteTouch, as its store would) and counted in it (touchNote.pend):
// the note's last pend keys are inserted, in one InsertChain of them all
// (insertStacked, a run), when the log is settled, just before the
// note's touch, or when a lookup or store is given a chain holding one
// of them (flushIn), or a put-off note is the oldest of too many
// (pendNotes). The noted touch moves every one of them, and no other
// touch moves one (the note holds its chain's last keys), so what the
// tier holds and its order after the touch are those of each block
// inserted at its store (kvtier.LRU.InsertChain). A store's room counts
// the keys put off (pendingDecodes.keys). A note with keys put off is
// never extended but by its chain's next decode (flushIn inserts them
// first), so they stay its last keys, and each key put off is put off
// in one note (deferDecode inserts one put off elsewhere first). The
// slow twin inserts each at its store (eagerDecodes:
// TestLazyTouchesAreEager, TestDecodesPutOffAreInsertedAtTheirStores).
//
// Regime/Tiers stores about 12 decode blocks a request, each through
// InsertChain, insertOne and the index's Add (about 4,000 instructions
// a request in all); put off, they go in as runs of about 10. Budget
// test (SERVESIM_BUDGET_FUNCS): 42,430 instructions a request each
// inserted at its store, 41,618 so. A key put off is marked in a table
// of counts by a hash of it (marks), which a lookup's chain, a store's
// and a decode's key are tested against before the notes are searched:
// with 4,096 marks, their false hits searched the notes for 807
// instructions a request (flushKey), with 16,384 for 282; and with 16
// notes put off at most, not 32, the count is 41,625, not 41,672.
type pendingDecodes struct {
	notes []int32 // the notes with keys put off, oldest first
	keys  int     // the keys put off
	from  int     // no chain holds a key put off before this place (a bound)
	marks []uint8 // by a hash of a key put off (pendSlot), how many: 0 is none
}

// pendNotes bounds the notes with keys put off (a replica's running
// requests, mostly): past it the oldest's are inserted. A test lowers it.
var pendNotes = 16

// eagerDecodes makes every port insert a decode's block at its store (the
// slow twin of keys put off; a test's switch).
var eagerDecodes = false

// decodesPutOff counts the decode blocks put off and inserted since (the
// tests' measure that they are; atomic, as touchesSkipped).
var decodesPutOff atomic.Int64

// pendSlot is the mark of key.
func pendSlot(key uint64) int { return int((key * keyMul) >> (64 - pendBits)) }

// pendBits is the bits of a mark's hash: 16,384 marks.
const pendBits = 14

// reset forgets the keys put off (settle inserted them).
func (d *pendingDecodes) reset() {
	if len(d.notes) == 0 {
		return
	}
	d.notes, d.keys, d.from = d.notes[:0], 0, math.MaxInt // insertPending took each key's mark back
}

// deferDecode puts off the store of a decode's block k, chain's last
// key, when it is not held, not put off already and chain less it is a
// note, and the note of chain would not settle the log: it notes the
// touch of chain (noteTouch, as Store), counting k as put off in the
// note. It reports whether it did. The note is found and extended here,
// not by covered and extend, and the key's mark hashed once: budget test
// (SERVESIM_BUDGET_FUNCS), Regime/Tiers 41,667 instructions a request
// through covered and extend, 41,108 so.
func (p *tierPort) deferDecode(k uint64, chain []uint64) bool {
	n := len(chain)
	g := &p.touches
	// g.bound is 0 until the log is made: no note covers chain then.
	if n < 2 || chain[n-1] != k || g.live+n > g.bound || g.nlive >= touchLogNotes || eagerDecodes {
		return false // no note covers chain less k, or its note would settle the log (noteTouch)
	}
	// The note of chain less k (covered's, the sentinel's empty keys
	// for none), extended by k below as extend extends it.
	prev := chain[n-2]
	i := g.last[g.touchSlot(prev)]
	nt := &g.notes[i]
	if len(nt.keys) != n-1 || nt.keys[n-2] != prev {
		return false
	}
	d := &p.pend
	if nt.pend == 0 || p.lost() || eagerContains {
		return p.deferDecodeRare(k, n, i) // asks the tier whether k is held
	}
	if checkPutOffChild {
		p.panicIfHeld(k)
	}
	if nt.done {
		panic(doneStored)
	}
	mark := pendSlot(k)
	if d.marks[mark] != 0 || len(nt.keys) == cap(nt.keys) {
		return p.deferDecodeRare(k, n, i) // put off in another note, maybe, or the note's keys grow
	}
	// deferDecodeRare's put off, where it would not call: the note has a
	// key put off (so the marks are made), k's mark is not set, and the
	// note's keys have room for k.
	nt.keys = nt.keys[:n]
	nt.keys[n-1] = k
	g.live++
	g.toEnd(i)
	g.setLast(g.touchSlot(k), i)
	nt.pend++
	d.keys++
	d.marks[mark]++
	return true
}

// deferDecodeRare is deferDecode past finding note i of k's chain (of n
// keys) less k, where it may call: the tier asked whether k is held (the
// note has no key put off, or the tier lost one), the notes searched for
// k (its mark is set: put off in another note, or a false hit), the
// note's first key put off, or its keys grown. deferDecode does the rest
// itself, without a call, so without the spills these calls made there:
// budget test (SERVESIM_BUDGET_FUNCS), Regime/Tiers servesim's own
// 34,696 instructions a request all in deferDecode, 34,559 so
// (deferDecode 1,963 to 1,645, with deferDecodeRare's 196).
func (p *tierPort) deferDecodeRare(k uint64, n int, i int32) bool {
	g := &p.touches
	nt := &g.notes[i]
	if nt.pend == 0 || p.lost() || eagerContains {
		if p.host.Contains(k) {
			return false
		}
	} else if checkPutOffChild {
		p.panicIfHeld(k)
	}
	if nt.done {
		panic(doneStored)
	}
	d := &p.pend
	mark := pendSlot(k)
	if d.marks != nil {
		if c := d.marks[mark]; c != 0 && (c == math.MaxUint8 || p.flushKey(k, n-1)) {
			return false // put off in another note: inserted now, and stored as ever (or a full mark)
		}
	}
	if nt.pend == 0 {
		if len(d.notes) >= pendNotes {
			p.insertPending(&g.notes[d.notes[0]])
			d.notes = append(d.notes[:0], d.notes[1:]...)
		}
		d.notes = append(d.notes, i)
		if d.marks == nil {
			d.marks = make([]uint8, 1<<pendBits)
			d.from = math.MaxInt
		}
		d.from = min(d.from, n-1)
	}
	nt.keys = append(nt.keys, k)
	g.live++
	g.toEnd(i)
	g.setLast(g.touchSlot(k), i)
	nt.pend++
	d.keys++
	d.marks[mark]++
	return true
}

// panicIfHeld panics if the tier holds k, a decode's block after one
// put off (checkPutOffChild's test).
func (p *tierPort) panicIfHeld(k uint64) {
	if p.host.Contains(k) {
		panic(putOffChild)
	}
}

// A decode's block after a block put off is not held.
//
// deferDecode asks the tier whether k, a decode's block, is held only
// when the block before it in its chain, prev, is not put off in the
// note it extends (nt.pend 0) or the tier ever lost a key (lost: it
// evicted, or refused a store). Otherwise k is not held, for these
// reasons. prev, put off, is not in the tier (a key put off leaves its
// note, inserted, before anything inserts a key of a chain that holds
// it: flushIn at every store and lookup, insertPending at a settle, and
// deferDecode puts off no key another note put off). Nothing takes a key
// out of a tier that never lost one, so k, if held, was inserted once,
// before now: by a store of a chain holding k, hence prev at the place
// before (a key names the keys before it, engine.BlockKeys), or by the
// insert of a note's keys put off, which holds k only if deferDecode put
// k off in it, after prev; either way with prev inserted first, or at
// once, where prev is put off now. Put off again since means stored
// again, which deferDecode does only to a key not held: prev not held
// then, and k held, inserted when prev was, which a tier that never lost
// a key keeps. So k held would have prev held, and prev is not. A
// request's decode blocks each come after the one before, mostly put off
// (Regime/Tiers: 11,801 of 12,000 decode blocks put off, all but the
// first of a request after one put off). A tier that evicted is full for
// good (an eviction frees what its insert takes, and nothing else takes
// a block out), so no store reaches deferDecode after one (Store settles
// first): lost's test of evictions only guards, and of refused stores
// keeps a chain's hole from mattering. checkPutOffChild asks the tier
// anyway and panics if it holds k (TestDecodeAfterPutOffIsNotHeld, the
// lazy ports' tests); eagerContains asks it always (the slow twin).
// Budget test (SERVESIM_BUDGET_FUNCS), Regime/Tiers: 39,015 instructions
// a request asking always, 38,903 so (deferDecode 2,082 to 1,963).

// checkPutOffChild makes deferDecode ask the tier whether a decode's
// block after one put off is held, and panic if it is (a test's switch).
var checkPutOffChild = false

// eagerContains makes deferDecode ask the tier whether every decode's
// block is held (the slow twin; a test's switch).
var eagerContains = false

// putOffChild is checkPutOffChild's panic.
const putOffChild = "sim: invariant tier-put-off broken: a decode's block after one put off is held"

// lost reports whether the host tier ever evicted a block or refused a
// store: ever took a key out, or left one out of a chain.
func (p *tierPort) lost() bool {
	c := p.host.Counters()
	return c.Evictions|c.Dropped != 0
}

// flushIn inserts the keys put off that chain holds, each with the rest
// of its note's.
func (p *tierPort) flushIn(chain []uint64) {
	d := &p.pend
	for q := d.from; q < len(chain) && len(d.notes) > 0; q++ {
		if d.marks[pendSlot(chain[q])] != 0 {
			p.flushKey(chain[q], q)
		}
	}
}

// flushKey inserts the keys put off of the note that holds k, put off,
// at place q, if one does, and reports whether one did.
func (p *tierPort) flushKey(k uint64, q int) bool {
	d, g := &p.pend, &p.touches
	for x, i := range d.notes {
		nt := &g.notes[i]
		if q < len(nt.keys) && q >= len(nt.keys)-int(nt.pend) && nt.keys[q] == k {
			p.insertPending(nt)
			d.notes = append(d.notes[:x], d.notes[x+1:]...)
			return true
		}
	}
	return false
}

// insertPending inserts the keys note nt put off, as one run below its
// chain's key before them (InsertChain), and counts them no more.
func (p *tierPort) insertPending(nt *touchNote) {
	d := &p.pend
	keys := nt.keys[len(nt.keys)-int(nt.pend):]
	for _, k := range keys {
		d.marks[pendSlot(k)]--
	}
	d.keys -= len(keys)
	decodesPutOff.Add(int64(len(keys)))
	nt.pend = 0
	p.evicted, _, _ = p.host.InsertChain(keys, nt.keys, p.evicted[:0])
	p.moved += len(keys)
}

// Finished is told by the engine that a request left for good (released:
// tierdone.Finisher), with its chain of stored blocks, the last own of
// them its own content. With lazy touches, the keys of its chain's note
// put off (a finished request's decode blocks, mostly), if they are its
// own, will not be asked for again: no other request computes them, and
// it will not come back. So they are not inserted by key: the note is
// no longer one a lookup or a store may flush (pendingDecodes), and at
// the settle its keys put off go in as anonymous blocks (insertDone),
// which take their places and are evicted as they would be.
//
// Regime/Tiers stores 12,000 decode blocks (1,000 requests); 2 of them
// are ever in a lookup's range past HBM (by their request, preempted).
// Budget test (SERVESIM_BUDGET_FUNCS): 40,785 instructions a request
// with every block put off inserted by key, 40,023 so (keyindex.addNew
// 3,452 to 3,148, kvtier.stack 1,972 to 1,799; Finished 288).
func (p *tierPort) Finished(_ tierdone.Mark, chain []uint64, own int) {
	d := &p.pend
	if len(d.notes) == 0 || len(chain) == 0 || eagerAnon {
		return
	}
	g := &p.touches
	i := g.covered(chain, len(chain)-1)
	if i == 0 {
		return
	}
	nt := &g.notes[i]
	if nt.pend == 0 || int(nt.pend) > own {
		return
	}
	x := slices.Index(d.notes, i)
	if x < 0 {
		return
	}
	d.notes = append(d.notes[:x], d.notes[x+1:]...)
	for _, k := range nt.keys[len(nt.keys)-int(nt.pend):] {
		d.marks[pendSlot(k)]--
	}
	nt.done = true
}

// insertDone puts note nt's keys put off, its finished request's own
// (Finished), in the tier as anonymous blocks, at the most recent end,
// and returns the keys the note's touch moves: those before them. The
// touch then puts those above the blocks: each block lies where
// InsertChain and the touch of every key (insertPending) put its key,
// just below the one before it, the first just below the chain's key
// before them.
func (p *tierPort) insertDone(nt *touchNote) []uint64 {
	n := int(nt.pend)
	p.pend.keys -= n
	decodesPutOff.Add(int64(n))
	anonBlocks.Add(int64(n))
	nt.pend, nt.done = 0, false
	p.evicted, _, _ = p.host.InsertAnon(n, p.evicted[:0])
	return nt.keys[:len(nt.keys)-n]
}

// doneStored is the panic of a store or a lookup of a finished
// request's chain (Finished): the engine offers a request's every store
// before it releases it, and its own keys are in no other chain.
const doneStored = "sim: invariant tier-done broken: a chain stored or looked up after its request left"

// eagerAnon makes every port insert a finished request's keys put off
// by key (the slow twin of Finished's anonymous blocks; a test's
// switch).
var eagerAnon = false

// anonBlocks counts the keys put off that went in as anonymous blocks
// (the tests' measure that some do; atomic, as touchesSkipped).
var anonBlocks atomic.Int64

// Load pins each key in the tier that serves it, the host tier first,
// and notes which on the request's slot.
func (p *tierPort) Load(ref int32, keys []uint64) {
	sl := &p.t.r.slots[ref]
	h := p.hostLRU()
	if h != nil && !p.counted {
		if p.t.shared == nil && !p.eager {
			// A host tier alone, which holds every key: pinned when a
			// reader needs the pins (lazy pins).
			sl.tierHost = append(sl.tierHost, keys...)
			p.loads += len(keys)
			if len(p.unpinned) == 0 {
				p.since = p.moved // keys looked up just now, their touch noted (idlePins)
			}
			p.unpinned = append(p.unpinned, ref)
			return
		}
		// The keys the host tier holds, from the first, in one call:
		// the loop below would pin them one by one.
		n := h.PinHeld(keys)
		sl.tierHost = append(sl.tierHost, keys[:n]...)
		p.loads += n
		keys = keys[n:]
	}
	for _, k := range keys {
		if h != nil && h.Pin(k) {
			sl.tierHost = append(sl.tierHost, k)
		} else if p.t.shared.Pin(k) {
			sl.tierShared = append(sl.tierShared, k)
		} else {
			panic("sim: invariant tier-load broken: a load of a key no tier holds")
		}
		if p.counted {
			p.loading[k]++
		}
	}
	p.loads += len(keys)
}

// Loads left unpinned past a store that cannot reach them (idlePins).
//
// Past a host tier's fill every store may evict, so every one pinned the
// loads in flight first (pinPending), though an eviction takes the least
// recent keys and a load's keys were just looked up: its touch, noted by
// the lookup (Find) just before the engine's Load, puts them at the most
// recent end. A port with lazy touches counts, in moved, a bound on the
// places that keys moved above others or were put in by, from Load's
// on: every settle's noted keys (its touches and the inserts of keys put
// off), every insert and every store's keys and chain. After the lookup's
// touch a load's key lies at most moved − since places from the most
// recent end, since being moved at the first load not pinned yet; so at
// least Len − (moved − since) places lie below every such load's keys.
// A store evicts at most its new keys (and the settle before it the keys
// put off), skipping at most its held keys (protected) and the keys of
// loads pinned: when the places below are at least those together, its
// eviction takes the same keys, and refuses nothing, with those loads
// pinned or not, and they are left unpinned. Regime/Tiers past its fill
// (budget test, SERVESIM_BUDGET_FUNCS): 64,947 instructions a request
// pinning at every such store (kvtier's PinHeld 1,444 and UnpinEach
// 1,710), 62,175 so. The slow twin pins at every
// store that may evict (twins.pinEachEvict: TestIdlePinsArePins).

// pinsIdle reports whether a store of n keys, which may evict, leaves
// the loads not pinned yet as they are (idlePins).
func (p *tierPort) pinsIdle(h *kvtier.LRU, n int) bool {
	if !p.lazy || p.pinEach {
		return false
	}
	below := h.Len() - (p.moved + p.touches.live - p.since) // the settle's keys too
	if below < 2*(n+p.pend.keys)+p.loads {
		return false
	}
	p.pinsSkipped++
	return true
}

// pinPending pins the host keys of the loads not pinned yet (lazy pins).
func (p *tierPort) pinPending() {
	for _, ref := range p.unpinned {
		keys := p.t.r.slots[ref].tierHost
		if p.host.PinHeld(keys) != len(keys) {
			panic("sim: invariant tier-load broken: a load of a key no tier holds")
		}
	}
	p.unpinned = p.unpinned[:0]
}

// isLoading reports whether this replica is loading key.
func (p *tierPort) isLoading(key uint64) bool {
	if !p.counted {
		p.pinPending()
		return p.hostLRU().Pinned(key)
	}
	return p.loading[key] > 0
}

// Release unpins the request's keys; a load that landed from the shared
// store is written back into the host tier (LMCache's StorageManager.get
// puts a remote hit into the local CPU backend).
func (p *tierPort) Release(ref int32) {
	sl := &p.t.r.slots[ref]
	h := p.hostLRU()
	if p.counted {
		for _, k := range sl.tierHost {
			h.Unpin(k)
			p.unload(k)
		}
	} else if i := slices.Index(p.unpinned, ref); i >= 0 {
		p.unpinned = slices.Delete(p.unpinned, i, i+1) // it pinned nothing (lazy pins)
	} else if h != nil {
		h.UnpinEach(sl.tierHost) // unload counts nothing
	}
	for _, k := range sl.tierShared {
		p.t.shared.Unpin(k)
		p.unload(k)
	}
	p.loads -= len(sl.tierHost) + len(sl.tierShared)
	if h != nil && ref == p.t.landing && len(sl.tierShared) > 0 {
		p.evicted, _, _ = h.Insert(sl.tierShared, p.evicted[:0])
	}
	sl.tierHost, sl.tierShared = sl.tierHost[:0], sl.tierShared[:0]
}

func (p *tierPort) unload(k uint64) {
	if !p.counted {
		return
	}
	if p.loading[k]--; p.loading[k] <= 0 {
		delete(p.loading, k)
	}
}

// plannedAsync notes what planned did not of a plan p that may reserve
// blocks for KV that lands later: a decode replica's of a disaggregated
// fleet (pools.go) or a replica's with tiers.
//
//go:noinline
func (r *runner) plannedAsync(rep *replica, p *engine.Plan) {
	if rep.remoteKV {
		r.plannedRemote(rep, p)
	}
	if rep.tiered && len(p.Reserved) > 0 {
		r.plannedTier(rep, p)
	}
}

// plannedTier starts the loads the plan p of replica rep reserved: the
// host part over the replica's link, the shared part over the store's,
// both from the plan's start.
func (r *runner) plannedTier(rep *replica, p *engine.Plan) {
	t := r.tiers
	b := float64(t.ports[rep.idx].block)
	rep.reservedAt = p.Start // landTier: a landing at its instant leaves it whole
	for _, res := range p.Reserved {
		if !res.Tier {
			continue
		}
		s := &r.slots[res.Ref]
		s.loadAt, s.tierPending = p.Start, 0
		if n := len(s.tierHost); n > 0 {
			s.loadHost = int32(n)
			t.movedHost += int64(n)
			t.host[rep.idx].link.start(p.Start, res.Ref, int64(math.Ceil(float64(n)*b*t.kvHost)))
			s.tierPending++
			r.armTier(rep.idx)
		}
		if n := len(s.tierShared); n > 0 {
			s.loadShared = int32(n)
			t.movedShared += int64(n)
			t.link.start(p.Start, res.Ref, int64(math.Ceil(float64(n)*b*t.kvShared)))
			s.tierPending++
			r.armTier(-1)
		}
	}
}

// tierLink is link k: replica k's host link, or the shared store's (-1).
func (t *tiers) tierLink(k int) (*transfers, *uint32, *time.Duration) {
	if k < 0 {
		return &t.link, &t.gen, &t.armed
	}
	h := &t.host[k]
	return &h.link, &h.gen, &h.armed
}

// armTier keeps one landing event queued for tier link k, at its next
// landing.
func (r *runner) armTier(k int) {
	l, gen, armed := r.tiers.tierLink(k)
	at, ok := l.next()
	if !ok {
		at = Never
	}
	if at == *armed {
		return
	}
	*armed = at
	*gen++
	if ok {
		r.events.push(event{at: at, class: classTierLand, ref: int32(k), gen: *gen})
	}
}

// landTier applies tier link k's landings due now: a request whose every
// part landed has its engine told (Land), and is planned if its replica
// is idle.
func (r *runner) landTier(k int32, gen uint32) error {
	t := r.tiers
	l, g, armed := t.tierLink(int(k))
	if *g != gen {
		return nil // the link's landings moved since
	}
	*armed = Never
	t.landed = l.land(r.now, t.landed[:0])
	for _, ref := range t.landed {
		s := &r.slots[ref]
		if s.tierPending--; s.tierPending > 0 {
			continue
		}
		wait := r.now - s.loadAt
		if s.rec.FirstToken == Never {
			s.rec.TierLoad += wait
		}
		if s.rec.FirstScheduled == Never {
			b := t.ports[s.rec.Replica].block
			s.rec.CachedHost += int(s.loadHost) * b
			s.rec.CachedShared += int(s.loadShared) * b
		}
		if s.rec.Measured {
			t.loads++
			t.loadWait.add(wait, r.col.limit())
		}
		s.loadHost, s.loadShared = 0, 0
		rep := &r.reps[s.rec.Replica]
		busy := rep.eng.Busy()
		if busy {
			// The steps of a run in flight that started before now have
			// taken their blocks and offered their stores, as step by
			// step, before the landing caches the request's blocks and
			// releases its pins. (The engine's Land does not sync: a
			// driver does, engine/fastpaths.go.) Without it those stores
			// would follow the Release, which matters only when one
			// evicts (the tier full) and reaches the landed keys,
			// unpinned then. No test reaches that: Regime/Tiers at 300
			// requests (TestTierLandingsInsideRunsAreStepwise's) lands
			// one load with steps unsynced at 6,000 host blocks over 200
			// MB/s and none at 150-2,000 blocks over 100-400 MB/s, each
			// the same without this line, against Stepwise.
			rep.run().SyncTo(r.now)
		}
		t.landing = ref
		err := rep.edit().Land(r.now, ref)
		t.landing = -1
		if err != nil {
			return fmt.Errorf("sim: replica %d, landing the tier load of request %d: %w", rep.idx, s.rec.ID, err)
		}
		if !busy {
			r.queuePlan(rep)
			continue
		}
		// As a Remote request's landing (land, pools.go): the landed
		// load is weighed by the replica's next plan, so a run in flight
		// stops after its step in flight (interrupt), as step by step. A
		// move that reserved at this instant (planned after its events:
		// an instantaneous load it reserved) is one step, which step by
		// step does not weigh it either; a run continued at a step end
		// at this instant (engine.Runner.Continue, before its events)
		// reserves nothing and is cut whole, as by an arrival. (Until
		// issue 41's twenty-seventh round a landing left the run in
		// flight whole: a host link of 200 MB/s under Regime/Tiers'
		// workload then admitted a load later than step by step.)
		// A move whose last step started before now, as the one step of
		// the plan that reserved the load mostly is, has nothing to cut
		// (Truncate keeps it whole): not asked (a tiered replica's
		// moves have no mixed step's lead: its j-th step ends j step
		// times after the start).
		if rep.stepDone-rep.stepTime < r.now || rep.moveAt == r.now && rep.reservedAt == r.now {
			continue
		}
		if err := r.interrupt(rep, false); err != nil {
			return err
		}
	}
	r.armTier(int(k))
	return nil
}

// cancelTier stops the loads of a request that left while loading.
func (r *runner) cancelTier(s *slot, ref int32) {
	if r.tiers == nil || s.tierPending == 0 {
		return
	}
	if s.loadHost > 0 {
		r.tiers.host[s.rec.Replica].link.cancel(r.now, ref)
		r.armTier(s.rec.Replica)
	}
	if s.loadShared > 0 {
		r.tiers.link.cancel(r.now, ref)
		r.armTier(-1)
	}
	s.tierPending, s.loadHost, s.loadShared = 0, 0, 0
}
