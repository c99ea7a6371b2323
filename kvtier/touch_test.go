package kvtier

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// twins drives two LRUs with the same operations, one touching with
// Touch and the other with touchEach, decoded from the input a byte at a
// time, and holds the order, Len, the counters and every answer equal.
// Keys are 0-23 and the lists mostly runs of consecutive keys, some
// reversed or with keys dropped, repeated or out of place, so that Touch
// meets runs, broken runs, keys not held and duplicates.
func twins(t *testing.T, capacity int, in []byte) {
	fast, slow := mustNew(t, capacity), mustNew(t, capacity)
	next := func() byte {
		if len(in) == 0 {
			return 0
		}
		b := in[0]
		in = in[1:]
		return b
	}
	list := func() []uint64 {
		n := 1 + int(next()%12)
		k := uint64(next() % 24)
		back := next()%4 == 0
		keys := make([]uint64, 0, n)
		for range n {
			keys = append(keys, k)
			switch b := next(); {
			case b < 200:
				if back {
					k = (k + 23) % 24
				} else {
					k = (k + 1) % 24
				}
			case b < 220: // a duplicate
				k = keys[int(b)%len(keys)]
			default:
				k = uint64(b % 24)
			}
		}
		return keys
	}
	for step := 0; len(in) > 0; step++ {
		switch op := next() % 8; op {
		case 0:
			keys := list()
			fast.Touch(keys)
			slow.touchEach(keys)
		case 1, 2: // TouchHeld against Contains from from
			keys := list()
			from := int(next()) % (len(keys) + 1)
			n := 0
			for n < len(keys)-from && slow.Contains(keys[from+n]) {
				n++
			}
			require.Equal(t, n, fast.TouchHeld(keys, from), "TouchHeld(%v, %d)", keys, from)
			slow.touchEach(keys)
		case 3, 4:
			var insert func(l *LRU) ([]uint64, int, bool)
			if op == 3 {
				keys := list()
				insert = func(l *LRU) ([]uint64, int, bool) { return l.Insert(keys, nil) }
			} else {
				n := int(next() % 5)
				insert = func(l *LRU) ([]uint64, int, bool) { return l.InsertAnon(n, nil) }
			}
			fe, fa, fok := insert(fast)
			se, sa, sok := insert(slow)
			require.Equal(t, sok, fok)
			require.Equal(t, se, fe)
			require.Equal(t, sa, fa)
		case 5:
			k := uint64(next() % 24)
			require.Equal(t, slow.Remove(k), fast.Remove(k))
		case 6:
			k := uint64(next() % 24)
			require.Equal(t, slow.Pin(k), fast.Pin(k))
		case 7:
			k := uint64(next() % 24)
			require.Equal(t, slow.Unpin(k), fast.Unpin(k))
		}
		require.Equal(t, order(slow), order(fast), "after step %d", step)
		require.Equal(t, slow.Len(), fast.Len())
		require.Equal(t, slow.Counters(), fast.Counters())
	}
}

// FuzzTouch holds Touch and TouchHeld, which move runs, to touchEach,
// which moves keys one by one, and TouchHeld's count to Contains's.
func FuzzTouch(f *testing.F) {
	f.Add(uint8(16), []byte{3, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 3, 2, 0, 0, 0})
	f.Add(uint8(20), []byte{3, 11, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 3, 1, 4, 1, 3, 0, 205, 0, 230, 1, 0, 6, 5, 250, 0, 0, 0, 0, 0, 5})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		twins(t, int(capacity%25), ops)
	})
}

// TestTouchIsTouchEach runs the twins on random inputs.
func TestTouchIsTouchEach(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 0x7e))
	for range 2000 {
		in := make([]byte, r.IntN(400))
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		twins(t, 8+r.IntN(17), in)
	}
}
