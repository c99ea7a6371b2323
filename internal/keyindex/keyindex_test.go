package keyindex

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// indexOps applies a stream of operations (Put, Del, DelKeys, Add, Reserve or Clear and PutNew, Missing, MissingMark and MissingPut, AddNew and AddIDs) to an Index
// and to a Go map, and fails at the first answer on which they differ. Keys come from
// a small range (collisions, reinserts and deletes of absent keys are
// common) or, half the time, from clustered homes: keys that differ only
// in their top bits land in runs that wrap around the array, the case
// backward-shift deletion must get right.
func indexOps(t *testing.T, ops []byte) {
	var ix Index
	ref := map[uint64]int32{}
	for len(ops) >= 4 {
		op, a, b := ops[0]%8, uint64(ops[1]), ops[2:4]
		ops = ops[4:]
		key := a % 97
		if op&1 == 0 {
			key = a << 56 // small multiples of 2^56: crowded homes
		}
		id := int32(binary.LittleEndian.Uint16(b))
		switch op {
		case 0, 1:
			if len(ref) < 5000 {
				ix.Put(key, id)
				ref[key] = id
			}
		case 2:
			ix.Del(key)
			delete(ref, key)
		case 3: // a run of keys from key, some held, some given twice
			run := []uint64{key}
			for d := range uint64(b[0] % 9) {
				run = append(run, key+d*(1+uint64(b[1]%2)<<56))
			}
			ix.DelKeys(run)
			for _, k := range run {
				delete(ref, k)
			}
		case 4, 5:
			if len(ref) < 5000 {
				got, added := ix.Add(key, id)
				want, held := ref[key]
				require.Equal(t, !held, added, "key %#x", key)
				if held {
					require.Equal(t, want, got, "Add of a held key %#x answers its id", key)
				} else {
					require.Equal(t, id, got)
					ref[key] = id
				}
			}
		case 6:
			n := len(ref) + int(id)%300
			require.Equal(t, 4*n > max(minSlots, len(ix.slots)), ix.Grows(n))
			if b[1]%4 != 0 {
				ix.Reserve(n)
				break
			}
			// Emptied and given its keys back, as kvtier's reindex: runs
			// of keys with consecutive ids, here one key each.
			ix.Clear(n)
			require.Zero(t, ix.Len())
			for k, v := range ref {
				ix.PutNew([]uint64{k}, v)
			}
			require.GreaterOrEqual(t, len(ix.slots), 4*n)
		case 7: // a run of keys from key, some held
			if len(ref) < 5000 {
				var run []uint64
				for d := range uint64(b[0] % 9) {
					run = append(run, key+d*(1+uint64(b[1]%2)<<56))
				}
				missing := 0
				for missing < len(run) {
					if _, held := ref[run[missing]]; held {
						break
					}
					missing++
				}
				require.Equal(t, missing, ix.Missing(run), "Missing(%#x)", run)
				// MissingMark answers as Missing and marks the keys it
				// found not held, no other slot.
				var f Filter
				v := b[1] | 1
				require.Equal(t, missing, ix.MissingMark(run, &f, v), "MissingMark(%#x)", run)
				var wantF Filter
				for _, k := range run[:missing] {
					wantF[FilterSlot(k)] = v
				}
				require.True(t, f == wantF, "MissingMark(%#x) marks the keys before the first held", run)
				if b[1]&32 != 0 && !ix.Grows(ix.Len()+len(run)) {
					// MissingPut answers as Missing and puts the keys
					// it found not held, each with its id (kvtier's
					// store into a full tier, its new keys' nodes
					// taken before its eviction).
					ids := make([]int32, len(run))
					for x := range ids {
						ids[x] = id + int32(3*(len(run)-x))
					}
					require.Equal(t, missing, ix.MissingPut(run, ids), "MissingPut(%#x)", run)
					for x, k := range run[:missing] {
						ref[k] = ids[x]
					}
					break
				}
				// AddIDs half the time: ids not consecutive, as a
				// free list gives them (kvtier's insertFreed).
				ids := make([]int32, len(run))
				for x := range ids {
					ids[x] = id + int32(x)
					if b[1]&8 != 0 {
						ids[x] = id + int32(3*(len(run)-x))
					}
				}
				var want []uint64
				for _, k := range run {
					if _, held := ref[k]; !held {
						ref[k] = ids[len(want)]
						want = append(want, k)
					}
				}
				// Appended to the keys added before (a segment's, as
				// kvtier's insertStacked gives them), or to none.
				var before []uint64
				if b[1]&4 != 0 {
					before = []uint64{0xdead, 0xbeef}
				}
				add := func() []uint64 { return ix.AddNew(run, id, before) }
				if b[1]&8 != 0 {
					add = func() []uint64 { return ix.AddIDs(run, ids, before) }
				}
				if got := add(); before == nil {
					require.Equal(t, want, got, "AddNew or AddIDs(%#x, %d, %v)", run, id, ids)
				} else {
					require.Equal(t, append([]uint64{0xdead, 0xbeef}, want...), got, "AddNew or AddIDs(%#x, %d, %v) after two keys", run, id, ids)
				}
			}
		}
		got, ok := ix.Get(key)
		want, wok := ref[key]
		require.Equal(t, wok, ok, "key %#x", key)
		require.Equal(t, want, got, "key %#x", key)
		require.Equal(t, len(ref), ix.Len())
	}
	seen := 0
	ix.Each(func(k uint64, id int32) {
		seen++
		require.Equal(t, ref[k], id, "key %#x", k)
	})
	require.Equal(t, len(ref), seen)
	for k, id := range ref {
		got, ok := ix.Get(k)
		require.True(t, ok, "key %#x", k)
		require.Equal(t, id, got)
	}
}

// TestIndexIsAMap runs long random operation streams through
// indexOps, growing the table past several doublings and shrinking it by
// deletes.
func TestIndexIsAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		ops := make([]byte, 4*20_000)
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		indexOps(t, ops)
	}
	// Many distinct keys: the table doubles from 64 to 16,384 slots.
	var ix Index
	for k := range uint64(8000) {
		ix.Put(k*0x1234567, int32(k))
	}
	for k := range uint64(8000) {
		if k%3 == 0 {
			ix.Del(k * 0x1234567)
		}
	}
	for k := range uint64(8000) {
		id, ok := ix.Get(k * 0x1234567)
		require.Equal(t, k%3 != 0, ok)
		if ok {
			require.Equal(t, int32(k), id)
		}
	}
}

// FuzzIndex holds the index to a Go map.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 2, 1, 0, 0, 1, 1, 5, 5})
	f.Fuzz(func(t *testing.T, ops []byte) { indexOps(t, ops) })
}

// TestDelKeysIsDelEach holds DelKeys to a loop of Dels, slot for slot:
// runs of keys, some held, some given twice, some in crowded homes whose
// probe runs wrap around the array, deleted from two equal tables.
func TestDelKeysIsDelEach(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var a, b Index
		keys := make([]uint64, 0, 600)
		for range 1 + r.IntN(600) {
			k := r.Uint64()
			if r.IntN(2) == 0 {
				k = uint64(r.IntN(64)) << 56 // crowded homes
			}
			keys = append(keys, k)
			id := int32(r.IntN(1000))
			a.Put(k, id)
			b.Put(k, id)
		}
		for range 20 {
			var run []uint64
			for range r.IntN(40) {
				k := keys[r.IntN(len(keys))]
				if r.IntN(5) == 0 {
					k = r.Uint64() // not held
				}
				run = append(run, k)
			}
			a.DelKeys(run)
			for _, k := range run {
				b.Del(k)
			}
			require.Equal(t, b.n, a.n, "round %d", round)
			require.Equal(t, b.slots, a.slots, "round %d", round)
		}
	}
}
