package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// count is key's copies, 0 without one.
func (c *keyCounts) count(key uint64) int32 {
	if key == 0 {
		return c.zero
	}
	if _, ok := c.find(key * keyMul); ok {
		return 1 + c.more[key*keyMul]
	}
	return 0
}

// len is the keys with a copy.
func (c *keyCounts) len() int {
	if c.zero > 0 {
		return c.held + 1
	}
	return c.held
}

// bytes is the memory the table holds (the map of more copies aside).
func (c *keyCounts) bytes() int { return 8 * len(c.hs) }

// asMap is the counts as a map, as the index kept them before keyCounts.
func (c *keyCounts) asMap() map[uint64]int32 {
	m := map[uint64]int32{}
	if c.zero > 0 {
		m[0] = c.zero
	}
	for _, h := range c.hs {
		if h != 0 {
			m[keyOfHash(h)] = 1 + c.more[h]
		}
	}
	return m
}

// check holds the table to its own rules and to ref, the map it
// stands for: every key held once, with ref's count, found from its
// home (no empty slot between them), no more than its limit held, and
// more copies only of keys held.
func (c *keyCounts) check(t *testing.T, ref map[uint64]int32) {
	t.Helper()
	if c.zero != ref[0] {
		t.Fatalf("key 0: %d copies, want %d", c.zero, ref[0])
	}
	if c.len() != len(ref) {
		t.Fatalf("%d keys held, want %d", c.len(), len(ref))
	}
	if c.held > c.limit || len(c.hs) > 0 && c.limit != len(c.hs)/keyLoadDen*keyLoadNum {
		t.Fatalf("%d keys held in %d slots, limit %d", c.held, len(c.hs), c.limit)
	}
	held := 0
	for i, h := range c.hs {
		if h == 0 {
			continue
		}
		held++
		if k := keyOfHash(h); 1+c.more[h] != ref[k] {
			t.Fatalf("key %#x: %d copies, want %d", k, 1+c.more[h], ref[k])
		}
		if j, ok := c.find(h); !ok || j != i {
			t.Fatalf("hash %#x at slot %d found at %d, %v, from its home", h, i, j, ok)
		}
	}
	if held != c.held {
		t.Fatalf("%d keys in the slots, %d counted", held, c.held)
	}
	for h, m := range c.more {
		if _, ok := c.find(h); !ok || m < 1 {
			t.Fatalf("hash %#x: %d copies more of a key not held", h, m)
		}
	}
}

// keyOfHash is the key whose product by keyMul is h: its home is h's
// top bits in every table (keyMul is odd, so it has an inverse mod 2⁶⁴).
func keyOfHash(h uint64) uint64 {
	inv := uint64(keyMul) // Newton's iteration: each step doubles the bits right
	for range 6 {
		inv *= 2 - keyMul*inv
	}
	return h * inv
}

// tableKeys is the keys keyCountsOps and maskCountsOps draw from: from
// a few pools: random ones, 0, and keys whose homes crowd the last
// slots of a small table (runs wrap around its end) or one slot of any
// table (long runs).
func tableKeys() []uint64 {
	pool := []uint64{0, 1}
	for i := range uint64(24) {
		pool = append(pool, keyOfHash(^uint64(0)-i<<52), keyOfHash(5<<58|i))
	}
	for i := range uint64(48) {
		pool = append(pool, keyOfHash(i*0x9e37_79b9_7f4a_7c15+i))
	}
	return pool
}

// keyCountsOps drives a keyCounts and a map with the operations ops
// spell, and holds them equal after each; it returns how many removals
// found a run of entries wrapping around the table's end.
func keyCountsOps(t *testing.T, ops []byte) (wrapped, slots int) {
	var c keyCounts
	if len(ops)%3 == 1 { // a third of them sized (sizeFor) for up to 1,020 keys, grown at once past 64 to 512 slots
		c.sizeFor(4 * int(ops[0]))
		c.jump = 64 << (ops[0] % 4)
	}
	ref := map[uint64]int32{}
	pool := tableKeys()
	key := func(b byte) uint64 { return pool[int(b)%len(pool)] }
	for len(ops) >= 2 {
		op, arg := ops[0], ops[1]
		ops = ops[2:]
		switch op % 4 {
		case 0, 1: // add a batch of keys, some more than once
			n := min(int(arg%40)+1, len(ops))
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = key(ops[i])
				ref[keys[i]]++
			}
			ops = ops[n:]
			if n == 1 && arg%2 == 0 { // one key, probed once: whether it is new
				if fresh := ref[keys[0]] == 1; c.addOne(keys[0]) != fresh {
					t.Fatalf("addOne(%#x) = %v, want %v", keys[0], !fresh, fresh)
				}
				break
			}
			c.add(keys)
		case 2: // remove one copy
			k := key(arg)
			if len(c.hs) > 0 && c.hs[0] != 0 && c.hs[len(c.hs)-1] != 0 {
				wrapped++
			}
			gone := ref[k] <= 1
			if ref[k]--; ref[k] <= 0 {
				delete(ref, k)
			}
			if c.remove(k) != gone {
				t.Fatalf("remove(%#x) = %v, want %v", k, !gone, gone)
			}
		case 3: // a fresh random key, added: the table grows past the pools
			k := (uint64(arg)+1)*0xbf58476d1ce4e5b9 ^ uint64(len(ops))
			ref[k]++
			if arg%2 == 0 {
				if !c.addOne(k) {
					t.Fatalf("addOne(%#x) = false, want true", k)
				}
				break
			}
			c.add([]uint64{k})
		}
		for _, k := range pool {
			if c.has(k) != (ref[k] > 0) || c.count(k) != ref[k] {
				t.Fatalf("key %#x: has %v, count %d, want %d", k, c.has(k), c.count(k), ref[k])
			}
		}
		c.check(t, ref)
	}
	return wrapped, len(c.hs)
}

// tableOps is n random bytes of stream (seed, stream) for keyCountsOps
// or maskCountsOps, whose operations take step bytes and more; with an
// even seed, those from byte from on are mostly removals (op 2), so
// that the table fills and then empties.
func tableOps(seed, stream uint64, n, from, step int) []byte {
	rng := rand.New(rand.NewPCG(seed, stream))
	ops := make([]byte, n)
	for i := range ops {
		ops[i] = byte(rng.Uint32())
	}
	if seed%2 == 0 {
		for i := from; i < n; i += step {
			if ops[i]%4 != 3 {
				ops[i] = 2
			}
		}
	}
	return ops
}

// TestKeyCountsIsAMap holds keyCounts to a map[uint64]int32 (the index's
// form before it, its slow twin) over random adds, removes and lookups,
// which must wrap runs around the table's end and grow it.
func TestKeyCountsIsAMap(t *testing.T) {
	wrapped, slots := 0, 0
	for seed := range uint64(40) {
		ops := tableOps(seed, 41, 3000+int(seed%3), 1500, 2) // a length of 1 mod 3 sizes the table first
		w, n := keyCountsOps(t, ops)
		wrapped, slots = wrapped+w, max(slots, n)
	}
	t.Logf("%d removals met a run wrapping around the end; tables of up to %d slots", wrapped, slots)
	require.Positive(t, wrapped, "no removal met a run wrapping around the end")
	require.GreaterOrEqual(t, slots, 512, "no table grew past the pools")
	var c keyCounts
	for i := range uint64(5000) {
		c.add([]uint64{i*7 + 1})
	}
	require.Equal(t, 16384, len(c.hs), "5,000 keys in 16,384 slots: at most half full")
	require.Equal(t, 8*16384, c.bytes())
	c = keyCounts{}
	c.sizeFor(28672) // Atlas's pool
	for i := range uint64(28672) {
		c.add([]uint64{i*7 + 1})
		if want := 65536; i >= jumpSlots/2 {
			require.Equal(t, want, len(c.hs), "sized for 28,672 keys, past 2,048: 65,536 slots")
		} else {
			require.LessOrEqual(t, len(c.hs), jumpSlots, "by doubling up to 2,048 keys")
		}
	}
	c = keyCounts{}
	c.sizeFor(1 << 20)
	for i := range uint64(jumpSlots/2 + 1) {
		c.add([]uint64{i + 1})
	}
	require.Equal(t, maxFullSlots, len(c.hs), "sized at most maxFullSlots")
}

// FuzzKeyCounts holds keyCounts to a map.
//
//	go test ./sim -run '^$' -fuzz '^FuzzKeyCounts$' -fuzztime 30s -fuzzminimizetime 1s -parallel 1
//
// Without -fuzzminimizetime the fuzzer spends up to 60 s minimizing each
// input that finds new coverage, and its execs a second read 0 meanwhile
// (minimization's execs are not counted): at 5,000 execs a second this
// target finds such inputs often, and seemed to stall after 3 s (execs
// 16,270 from 3 s to 26 s of a 26 s run); with 1 s it ran 27,383 in 25 s
// and found 36 new inputs.
func FuzzKeyCounts(f *testing.F) {
	f.Add([]byte{0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2, 1, 2, 3})
	f.Fuzz(func(t *testing.T, ops []byte) { keyCountsOps(t, ops) })
}

// TestRunStartsIsAMap holds runStarts to the map[uint64]storedRun it
// stands for (its slow twin) over random puts, gets and clears, as an
// index keeps runs: at most maxArena/minStored held between clears,
// keys that crowd one home or the table's last slots (runs of slots
// wrapping around its end), key 0 never kept.
func TestRunStartsIsAMap(t *testing.T) {
	wrapped, slots := 0, 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 43))
		var pool []uint64
		for i := range uint64(40) {
			pool = append(pool, keyOfHash(^uint64(0)-i<<50), keyOfHash(5<<58|i))
		}
		for range 3000 {
			pool = append(pool, rng.Uint64())
		}
		pool = append(pool, 0)
		var x runStarts
		ref := map[uint64]storedRun{}
		for op := range 20000 {
			k := pool[rng.IntN(len(pool))]
			switch r := rng.IntN(100); {
			case r == 0 && (seed%2 == 0 || rng.IntN(10) == 0) || len(ref) == maxArena/minStored: // the arena is full (seldom, in half the seeds: the table made whole)
				x.clear()
				clear(ref)
			case r < 50:
				run := storedRun{off: int32(op), n: int32(rng.IntN(100)), forgot: uint64(rng.IntN(3))}
				x.put(k, run)
				if k != 0 {
					ref[k] = run
				}
			default:
				got, ok := x.get(k)
				want, wok := ref[k]
				require.Equal(t, wok, ok, "seed %d op %d key %#x", seed, op, k)
				require.Equal(t, want, got, "seed %d op %d key %#x", seed, op, k)
			}
			require.Equal(t, len(ref), x.n)
			if x.n > 0 && x.slots[0].h != 0 && x.slots[len(x.slots)-1].h != 0 {
				wrapped++
			}
			slots = max(slots, len(x.slots))
		}
		for k, want := range ref {
			got, ok := x.get(k)
			require.True(t, ok)
			require.Equal(t, want, got)
		}
	}
	require.Positive(t, wrapped, "no run of slots wrapped around the end")
	require.Equal(t, startSlots, slots, "no table made whole")
	var x runStarts
	for i := range uint64(maxArena / minStored) { // as many runs as an arena holds
		x.put(i+1, storedRun{n: int32(i)})
	}
	require.Equal(t, 2*maxArena/minStored, len(x.slots), "twice the runs an arena holds")
	for i := range uint64(maxArena / minStored) {
		r, ok := x.get(i + 1)
		require.True(t, ok)
		require.Equal(t, int32(i), r.n)
	}
}
