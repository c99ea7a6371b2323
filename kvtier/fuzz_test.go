package kvtier

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// ref is the slow reference: the blocks in a slice, least recent first,
// one element per block (an anonymous block as anonKey), with pin counts.
type ref struct {
	capacity int
	blocks   []uint64
	pins     map[uint64]int
}

func (r *ref) held(k uint64) bool { return slices.Contains(r.blocks, k) }

// store evicts least recent first, skipping pinned and protected blocks,
// to make room for add new blocks, then appends them; or refuses whole.
func (r *ref) store(newBlocks []uint64, protected []uint64) (evicted []uint64, anon int, ok bool) {
	need := len(r.blocks) + len(newBlocks) - r.capacity
	var victims []int
	for i, k := range r.blocks {
		if need <= len(victims) {
			break
		}
		if k == anonKey || r.pins[k] == 0 && !slices.Contains(protected, k) {
			victims = append(victims, i)
		}
	}
	if need > len(victims) {
		return nil, 0, false
	}
	for j := len(victims) - 1; j >= 0; j-- {
		r.blocks = slices.Delete(r.blocks, victims[j], victims[j]+1)
	}
	r.blocks = append(r.blocks, newBlocks...)
	return nil, 0, true
}

// FuzzLRU drives an LRU and the reference with the same operations,
// decoded from the input two bytes at a time, and holds every answer,
// the recency order, Len and the counters equal.
func FuzzLRU(f *testing.F) {
	f.Add(uint8(4), []byte{0, 1, 0, 2, 1, 1, 2, 3, 3, 0, 4, 1, 5, 2})
	f.Add(uint8(0), []byte{0, 1, 5, 3, 1, 1})
	f.Add(uint8(3), []byte{0, 0x21, 3, 1, 0, 0x43, 5, 2, 4, 1, 6, 0x12, 0, 0x55})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		c := int(capacity % 17)
		l := mustNew(t, c)
		r := &ref{capacity: c, blocks: []uint64{}, pins: map[uint64]int{}}
		var want Counters
		for n := 0; n+1 < len(ops); n += 2 {
			op, arg := ops[n]%7, ops[n+1]
			key := uint64(arg % 16)
			switch op {
			case 0: // Insert a chain of 1-4 keys (from the high bits)
				keys := []uint64{key}
				for j := range int(arg>>4) % 4 {
					keys = append(keys, (key+uint64(j)*5+1)%16)
				}
				var fresh, protected []uint64
				for _, k := range keys {
					if r.held(k) {
						protected = append(protected, k)
					} else if !slices.Contains(fresh, k) {
						fresh = append(fresh, k)
					}
				}
				before := slices.Clone(r.blocks)
				_, _, wantOK := r.store(fresh, protected)
				ev, anon, ok := l.Insert(keys, nil)
				require.Equal(t, wantOK, ok, "Insert %v", keys)
				checkEvicted(t, before, r.blocks, 0, ev, anon)
				if len(fresh) > 0 {
					if ok {
						want.Evictions += int64(len(ev) + anon)
					} else {
						want.Dropped += int64(len(fresh))
					}
				}
			case 1: // InsertAnon of 0-7 blocks
				k := int(arg % 8)
				before := slices.Clone(r.blocks)
				run := slices.Repeat([]uint64{anonKey}, k)
				_, _, wantOK := r.store(run, nil)
				ev, anon, ok := l.InsertAnon(k, nil)
				require.Equal(t, wantOK, ok, "InsertAnon %d", k)
				added := 0
				if ok {
					added = k
				}
				checkEvicted(t, before, r.blocks, added, ev, anon)
				if k > 0 {
					if ok {
						want.Evictions += int64(len(ev) + anon)
					} else {
						want.Dropped += int64(k)
					}
				}
			case 2: // Lookup
				hit := r.held(key)
				require.Equal(t, hit, l.Lookup(key))
				if hit {
					want.Hits++
				} else {
					want.Misses++
				}
			case 3: // Touch a chain of 1-4 keys, reversed
				keys := []uint64{key, (key + 3) % 16, (key + 7) % 16}[:1+int(arg>>4)%3]
				for j := len(keys) - 1; j >= 0; j-- {
					if i := slices.Index(r.blocks, keys[j]); i >= 0 {
						r.blocks = append(slices.Delete(r.blocks, i, i+1), keys[j])
					}
				}
				l.Touch(keys)
			case 4: // Remove
				i := slices.Index(r.blocks, key)
				wantOK := i >= 0 && r.pins[key] == 0
				if wantOK {
					r.blocks = slices.Delete(r.blocks, i, i+1)
				}
				require.Equal(t, wantOK, l.Remove(key))
			case 5: // Pin
				wantOK := r.held(key)
				if wantOK {
					r.pins[key]++
				}
				require.Equal(t, wantOK, l.Pin(key))
			case 6: // Unpin
				wantOK := r.held(key) && r.pins[key] > 0
				if wantOK {
					r.pins[key]--
				}
				require.Equal(t, wantOK, l.Unpin(key))
			}
			for k, p := range r.pins {
				if !r.held(k) {
					require.Zero(t, p, "a pinned block left the tier")
					delete(r.pins, k)
				}
			}
			require.Equal(t, r.blocks, order(l), "after op %d (%d, %d)", n/2, op, arg)
			require.Equal(t, len(r.blocks), l.Len())
			require.LessOrEqual(t, l.Len(), l.Capacity())
			require.Equal(t, want, l.Counters())
		}
	})
}

// checkEvicted holds Insert's report to the difference of the blocks
// before and after: the keys that left, least recent first, and the
// anonymous blocks that left (added is the store's own anonymous run).
func checkEvicted(t *testing.T, before, after []uint64, added int, evicted []uint64, anon int) {
	t.Helper()
	var gone []uint64
	for _, k := range before {
		if k != anonKey && !slices.Contains(after, k) {
			gone = append(gone, k)
		}
	}
	require.Equal(t, gone, evicted)
	a := func(s []uint64) int {
		n := 0
		for _, k := range s {
			if k == anonKey {
				n++
			}
		}
		return n
	}
	require.Equal(t, a(before)+added-anon, a(after), "anonymous blocks conserved")
}
