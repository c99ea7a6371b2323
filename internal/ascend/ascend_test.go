package ascend

import (
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/internal/lcp"
)

// TestLenIsEach holds Len to its twin on runs of every
// length up to 70 broken anywhere by any step (wrapping past the largest
// id included), and on random ids.
func TestLenIsEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 8))
	for n := 1; n <= 70; n++ {
		for brk := 0; brk <= n; brk++ {
			for _, step := range []uint64{0, 2, ^uint64(0), 1 << 63, 9} {
				for _, first := range []uint64{0, 7, ^uint64(0) - 3, rng.Uint64()} {
					ids := make([]uint64, n)
					for i := range ids {
						ids[i] = first + uint64(i)
					}
					if brk > 0 && brk < n {
						ids[brk] += step - 1 // a step other than one
					}
					if got, want := Len(ids), Each(ids); got != want {
						t.Fatalf("Len(%v) = %d, its twin %d", ids, got, want)
					}
				}
			}
		}
	}
	for range 20_000 {
		ids := make([]uint64, 1+rng.IntN(70))
		x := rng.Uint64()
		for i := range ids {
			ids[i] = x
			if x++; rng.IntN(30) == 0 {
				x += uint64(rng.IntN(3)) - 1
			}
		}
		if got, want := Len(ids), Each(ids); got != want {
			t.Fatalf("Len(%v) = %d, its twin %d", ids, got, want)
		}
	}
}

// TestCommonIsLCP holds Common to lcp.Len on pairs of slices that agree
// up to a random point (or throughout), of random lengths, tried at every
// place (and before and past them).
func TestCommonIsLCP(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 9))
	for range 5_000 {
		a := make([]uint64, rng.IntN(40))
		for i := range a {
			a[i] = uint64(rng.IntN(4))
		}
		b := append([]uint64(nil), a[:rng.IntN(len(a)+1)]...)
		for range rng.IntN(10) {
			b = append(b, uint64(rng.IntN(4)))
		}
		for at := -1; at <= max(len(a), len(b))+1; at++ {
			if got, want := Common(a, b, at), lcp.Len(a, b); got != want {
				t.Fatalf("Common(%v, %v, %d) = %d, lcp.Len %d", a, b, at, got, want)
			}
		}
	}
}

// TestCommonTwoIsLCP holds CommonTwo to lcp.Len on a whose first at ids
// run on from its first (then anything) and b of one or two runs, of
// lengths up to 40, b sharing a's first id or not, its second run
// starting anywhere (at an id that would go on from the first
// excepted: then it is one run), and at every at within a's run.
func TestCommonTwoIsLCP(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 11))
	for range 20_000 {
		asc := 1 + rng.IntN(40)
		a := make([]uint64, asc+rng.IntN(5))
		first := []uint64{0, 5, ^uint64(0) - 2, rng.Uint64()}[rng.IntN(4)]
		for i := range a {
			a[i] = first + uint64(i)
			if i >= asc {
				a[i] = uint64(rng.IntN(4)) + first + uint64(i) - 1 // perhaps at its place
			}
		}
		n := 1 + rng.IntN(45)
		brk := 1 + rng.IntN(n)
		bfirst := first
		if rng.IntN(4) == 0 {
			bfirst = []uint64{first + 1, first - 1, rng.Uint64()}[rng.IntN(3)]
		}
		second := []uint64{0, bfirst + uint64(brk) + 1, bfirst - 1, a[min(brk, len(a)-1)], rng.Uint64()}[rng.IntN(5)]
		if second == bfirst+uint64(brk) {
			second++
		}
		b := make([]uint64, n)
		for i := range b {
			b[i] = bfirst + uint64(i)
			if i >= brk {
				b[i] = second + uint64(i-brk)
			}
		}
		for at := -1; at <= asc; at++ {
			if got, want := CommonTwo(a, b, at), lcp.Len(a, b); got != want {
				t.Fatalf("CommonTwo(%v, %v, %d) = %d, lcp.Len %d", a, b, at, got, want)
			}
		}
	}
}

// TestTwoIsLen holds Two to Len on ids of one or two runs of every length
// up to 70, at every guess, the second starting anywhere (an id that would go on from
// the first excepted: then it is one run), and finds a third run where
// its check sees it (the last id out of its place).
func TestTwoIsLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 10))
	for n := 1; n <= 70; n++ {
		for brk := 1; brk <= n; brk++ {
			for _, first := range []uint64{0, 7, ^uint64(0) - 3, rng.Uint64()} {
				for _, second := range []uint64{0, first + uint64(brk) + 1, first - 1, ^uint64(0), rng.Uint64()} {
					ids := make([]uint64, n)
					for i := range ids {
						ids[i] = first + uint64(i)
						if i >= brk {
							ids[i] = second + uint64(i-brk)
						}
					}
					for guess := -1; guess <= n+1; guess++ {
						k, ok := Two(ids, guess)
						if !ok || k != Len(ids) {
							t.Fatalf("Two(%v, %d) = %d, %v; Len %d", ids, guess, k, ok, Len(ids))
						}
					}
				}
			}
		}
	}
	// Three runs whose last id is out of the second's place: not ok, at
	// every guess (3, where the first run ends, is taken without the
	// bisection).
	ids := []uint64{1, 2, 3, 10, 11, 20, 21}
	for guess := -1; guess <= len(ids)+1; guess++ {
		if _, ok := Two(ids, guess); ok {
			t.Fatalf("Two(%v, %d) passed its check", ids, guess)
		}
	}
}

// TestRiseIsLen holds Rise to Len on rising ids of every length up to 70,
// gaps anywhere (to the largest id included), and on random rising ids
// of up to 300; and finds ids that do not rise where it reads them.
func TestRiseIsLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 12))
	for n := 1; n <= 70; n++ {
		for brk := 1; brk <= n; brk++ {
			for _, gap := range []uint64{0, 1, 2, 1 << 40} {
				for _, first := range []uint64{0, 7, rng.Uint64N(1 << 62)} {
					ids := make([]uint64, n)
					for i := range ids {
						ids[i] = first + uint64(i)
						if i >= brk {
							ids[i] += gap
						}
					}
					for guess := range n + 2 {
						if k, ok := Rise(ids, guess); !ok || k != Len(ids) {
							t.Fatalf("Rise(%v, %d) = %d, %v; Len %d", ids, guess, k, ok, Len(ids))
						}
					}
				}
			}
		}
	}
	for n := 1; n <= 64; n++ { // the largest ids
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = ^uint64(0) - uint64(n-1-i)
		}
		if k, ok := Rise(ids, 0); !ok || k != n {
			t.Fatalf("Rise(%v) = %d, %v; want %d", ids, k, ok, n)
		}
	}
	for range 20_000 {
		ids := make([]uint64, 1+rng.IntN(300))
		x := rng.Uint64N(1 << 62)
		runs := 1 + rng.IntN(12)
		for i := range ids {
			ids[i] = x
			x++
			if rng.IntN(len(ids)) < runs {
				x += 1 + rng.Uint64N(1+rng.Uint64N(1<<20))
			}
		}
		for u := 0; u < len(ids); {
			want := Len(ids[u:])
			for _, guess := range []int{0, rng.IntN(len(ids) - u + 1), want, want - 1, want + 1} {
				if k, ok := Rise(ids[u:], guess); !ok || k != want {
					t.Fatalf("Rise(%v, %d) = %d, %v; Len %d", ids[u:], guess, k, ok, want)
				}
			}
			u += want
		}
	}
	// Ids that fall where Rise reads them: not ok.
	for _, ids := range [][]uint64{{5, 6, 7, 2}, {5, 6, 7, 7}, {5, 6, 4, 7, 100}, {5, 6, 7, 8, 3, 100}} {
		if _, ok := Rise(ids, 0); ok {
			t.Fatalf("Rise(%v) passed its check", ids)
		}
	}
}
