package costmodel

import (
	"errors"
	"fmt"
	"slices"
)

// attentionGrid is one layer's attention time, µs. The profile times one
// prefill chunk of pc tokens on kp context beside n decodes of kv tokens
// each (uniform decodes); a step's decodes differ in context, so the grid
// is read in two ways and the step pays the larger:
//
//   - the mean-context reading with the skew correction, as LLMServingSim
//     reads it: (1 − α)·A(n, mean kv) + α·A(n, max kv), α the varlen
//     kernel's with a chunk in the batch and the pure-decode kernel's
//     without (Profile.SkewAlpha, DecodeSkewAlpha). The mean is read
//     from a copy of the grid indexed by the decodes' total context
//     (total, over pc, kp, n, k = n·kv), because adding a short decode
//     lowers a mean but never a total;
//   - the longest-decodes bound, max over j of A(j, j-th longest kv) (j up
//     to maxSorted): a batch holding j decodes of at least some context is
//     never faster than those j alone at exactly it. It is exact for uniform decodes,
//     and it carries what the mean misses on the varlen path (any step
//     with prefill), where one CTA per sequence and head walks its whole
//     KV, so that fewer, longer decodes of the same total are slower: on
//     the RTX PRO 6000 beside a 16-token chunk one decode of 16,384
//     tokens takes 364 µs, sixteen of 1,024 take 82 µs.
//
// Both readings are multilinear between grid points. The grids are built
// in three passes:
//
//  1. the points are placed on the product of every axis value any point
//     uses (a profiler may refine an axis in part of the space only:
//     LLMServingSim's adds factor-1.5 points above 512 tokens of context);
//     a cell no point timed is filled by linear interpolation between its
//     nearest known neighbours along one axis (the chunk axis last, see
//     fillOrder), pass after pass, and a cell nothing brackets (more
//     decodes beside a prefill than the profile timed) by linear
//     extrapolation along the decodes, else by the nearest value;
//  2. perSeq, the uniform grid, is replaced by its least majorant that is
//     non-decreasing along every axis (a running maximum along each in
//     turn): more tokens, context or sequences never cost less. lifted is
//     the largest raise;
//  3. total is read from perSeq at k / n and made non-decreasing in n at
//     fixed total: flat below each line's minimum over the decodes whose
//     context k / n was profiled (where fewer, longer decodes are slower,
//     which the bound above carries) and a running maximum above it; then
//     running maxima along the other axes.
//     lowered is the largest drop below perSeq at a profiled point.
//
// Beyond the last value of an axis the time at the edge is scaled in
// proportion (attention work grows with each axis), which keeps the grid
// monotone; the model warns.
type attentionGrid struct {
	perSeq, total *grid4
	// alpha and alphaDecode are the skew corrections of the varlen and
	// the pure-decode kernel.
	alpha, alphaDecode float64

	kvMax    float64 // longest profiled decode context
	chunkN   float64 // most decodes profiled beside a prefill chunk
	minChunk float64 // smallest profiled chunk > 0: smaller chunks are priced as it
	filled   int     // natural-grid cells no point timed
	lifted   float64 // largest raise of a profiled point by perSeq's majorant, µs
	lowered  float64 // largest drop of total below perSeq at a profiled point, µs
}

const (
	axPC = iota
	axKP
	axN
	axK
)

func newAttentionGrid(ps []AttentionPoint, alpha, alphaDecode float64) (*attentionGrid, error) {
	nat, err := naturalGrid(ps)
	if err != nil {
		return nil, err
	}
	per := &grid4{axes: nat.axes, stride: nat.stride, v: nat.v}
	before := slices.Clone(per.v)
	for a := range 4 {
		per.runningMax(a)
	}
	g := &attentionGrid{perSeq: per, alpha: alpha, alphaDecode: alphaDecode, chunkN: nat.chunkN, filled: nat.filled, minChunk: nat.axes[axPC][1]}
	g.kvMax = nat.axes[axK][len(nat.axes[axK])-1]
	for i := range per.v {
		if nat.measured[i] {
			g.lifted = max(g.lifted, per.v[i]-before[i])
		}
	}
	g.total, g.lowered = totalGrid(per)
	return g, nil
}

// totalGrid re-indexes per by total decode context and makes it
// monotone; lowered is the largest drop below per at a total that n
// decodes of a profiled context make.
func totalGrid(per *grid4) (t *grid4, lowered float64) {
	axes := per.axes
	axes[axK] = totalContexts(axes[axN], axes[axK])
	t = newGrid4(axes)
	kv := per.axes[axK]
	for i := range axes[axPC] {
		for j := range axes[axKP] {
			for l, n := range axes[axN] {
				c := per.index(i, j, l, 0)
				row := per.v[c : c+len(kv)]
				for m, k := range axes[axK] {
					t.v[t.index(i, j, l, m)] = rowAt(kv, row, n, k)
				}
			}
		}
	}
	before := slices.Clone(t.v)
	profiled := func(c int) bool {
		n, k := axes[axN][(c/t.stride[axN])%len(axes[axN])], axes[axK][c%len(axes[axK])]
		return n > 0 && k/n >= kv[0] && k/n <= kv[len(kv)-1]
	}
	t.valley(axN, 1, profiled) // n = 0, no decode, is the prefill alone: below every n > 0 already
	for _, a := range []int{axK, axPC, axKP} {
		t.runningMax(a)
	}
	for c := range t.v {
		if profiled(c) {
			lowered = max(lowered, before[c]-t.v[c])
		}
	}
	return t, lowered
}

// rowAt reads a row over per-sequence contexts kv at total context k for
// n decodes: held below the first profiled context, continued at the
// last doubling's slope beyond the last (the row is non-decreasing).
func rowAt(kv, row []float64, n, k float64) float64 {
	if n == 0 {
		return row[0]
	}
	x, last := k/n, len(kv)-1
	if x > kv[last] && last > 0 {
		half := max(kv[last]/2, kv[0])
		slope := (row[last] - interpolate(kv, row, half)) / (kv[last] - half)
		return row[last] + slope*(x-kv[last])
	}
	return interpolate(kv, row, x)
}

// interpolate reads ys over the increasing xs at x, held at the ends.
func interpolate(xs, ys []float64, x float64) float64 {
	i, t := bracket(xs, x)
	if t == 0 {
		return ys[i]
	}
	return ys[i] + t*(ys[i+1]-ys[i])
}

// totalContexts is every n × kv, n > 0, sorted and unique.
func totalContexts(ns, kvs []float64) []float64 {
	var ks []float64
	for _, n := range ns {
		for _, kv := range kvs {
			if n > 0 {
				ks = append(ks, n*kv)
			}
		}
	}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// chunk is the chunk size the grids are read at: a chunk smaller than the
// smallest profiled one is priced as that one (any prefill in the batch
// puts the decodes on the varlen path).
func (g *attentionGrid) chunk(pc float64) float64 {
	if pc > 0 && pc < g.minChunk {
		return g.minChunk
	}
	return pc
}

// prefill is one chunk of pc tokens on kp context without decodes, µs.
func (g *attentionGrid) prefill(pc, kp float64) float64 {
	return g.perSeq.at(g.chunk(pc), kp, 0, 0)
}

// batch is one chunk of pc tokens on kp context (pc = 0: none) beside n
// decodes of total context k whose longest contexts, longest first, are
// desc (all of them, or the longest maxSorted), µs. With a chunk it is
// never below the decodes alone (when the pure-decode kernel's skew
// correction is the larger, it could be).
func (g *attentionGrid) batch(pc, kp float64, desc []int, n, k float64) float64 {
	pc = g.chunk(pc)
	if n == 0 {
		return g.perSeq.at(pc, kp, 0, 0)
	}
	if pc == 0 {
		return g.decodes(0, 0, desc, n, k, g.alphaDecode)
	}
	t := g.decodes(pc, kp, desc, n, k, g.alpha)
	if g.alphaDecode > g.alpha {
		t = max(t, g.decodes(0, 0, desc, n, k, g.alphaDecode))
	}
	return t
}

// decodes is batch's reading for n > 0 decodes with skew correction
// alpha: the larger of the mean-context reading and the longest-decodes
// bound (see attentionGrid).
func (g *attentionGrid) decodes(pc, kp float64, desc []int, n, k, alpha float64) float64 {
	long := float64(desc[0])
	t := g.total.at(pc, kp, n, k)
	if alpha > 0 {
		t = (1-alpha)*t + alpha*g.perSeq.at(pc, kp, n, long)
	}
	cs := [4]coord{g.perSeq.coord(0, pc), g.perSeq.coord(1, kp)}
	var near [4]int // the last lower bounds found, where the next search starts
	for j, c := range desc {
		cs[2] = g.perSeq.coordFrom(2, float64(j+1), &near[2])
		cs[3] = g.perSeq.coordFrom(3, float64(c), &near[3])
		t = max(t, g.perSeq.read(&cs))
	}
	return t
}

// outside describes where a lookup left the profiled grid.
func (g *attentionGrid) outside(pc, kp, n, long float64) []string {
	var out []string
	edge := func(a int) float64 { xs := g.perSeq.axes[a]; return xs[len(xs)-1] }
	if pc > edge(axPC) {
		out = append(out, fmt.Sprintf("a prefill chunk of %v tokens (profiled up to %v)", pc, edge(axPC)))
	}
	if kp > edge(axKP) {
		out = append(out, fmt.Sprintf("a prefill context of %v tokens (profiled up to %v)", kp, edge(axKP)))
	}
	if n > edge(axN) {
		out = append(out, fmt.Sprintf("%v decodes (profiled up to %v)", n, edge(axN)))
	} else if pc > 0 && n > g.chunkN {
		out = append(out, fmt.Sprintf("%v decodes beside a prefill chunk (profiled up to %v)", n, g.chunkN))
	}
	if long > g.kvMax {
		out = append(out, fmt.Sprintf("a decode context of %v tokens (profiled up to %v)", long, g.kvMax))
	}
	return out
}

// grid4 is a function on the product of four increasing axes, multilinear
// between grid points. Beyond an axis's last value it is the value at the
// edge times x / last; below the first, the value at the first.
type grid4 struct {
	axes   [4][]float64
	stride [4]int
	v      []float64
}

func newGrid4(axes [4][]float64) *grid4 {
	g := &grid4{axes: axes, stride: strides(axes)}
	g.v = make([]float64, len(axes[0])*g.stride[0])
	return g
}

func strides(axes [4][]float64) [4]int {
	var s [4]int
	s[3] = 1
	for a := 2; a >= 0; a-- {
		s[a] = s[a+1] * len(axes[a+1])
	}
	return s
}

func (g *grid4) index(i, j, l, m int) int {
	return i*g.stride[0] + j*g.stride[1] + l*g.stride[2] + m
}

// lines calls f with the first cell of every line along axis a.
func (g *grid4) lines(a int, f func(first int)) {
	step, n := g.stride[a], len(g.axes[a])
	for c := range g.v {
		if (c/step)%n == 0 {
			f(c)
		}
	}
}

// runningMax makes the grid non-decreasing along axis a (the least
// majorant that is).
func (g *grid4) runningMax(a int) {
	step, n := g.stride[a], len(g.axes[a])
	g.lines(a, func(c int) {
		for s := 1; s < n; s++ {
			g.v[c+s*step] = max(g.v[c+s*step], g.v[c+(s-1)*step])
		}
	})
}

// valley makes the grid non-decreasing along axis a from index from on
// (cells below it are left alone): each line takes its minimum among the
// cells inside reached (reached(c) for a cell index c; all cells when
// none is) below the point where it is reached, and its running maximum
// above it.
func (g *grid4) valley(a, from int, reached func(c int) bool) {
	step, n := g.stride[a], len(g.axes[a])
	g.lines(a, func(c int) {
		low := -1
		for s := from; s < n; s++ {
			if reached(c+s*step) && (low < 0 || g.v[c+s*step] < g.v[c+low*step]) {
				low = s
			}
		}
		if low < 0 {
			low = from
		}
		for s := from; s < low; s++ {
			g.v[c+s*step] = g.v[c+low*step]
		}
		for s := low + 1; s < n; s++ {
			g.v[c+s*step] = max(g.v[c+s*step], g.v[c+(s-1)*step])
		}
	})
}

// coord is one axis's share of a lookup: the cell's lower index, the
// fraction towards the next, and the factor applied beyond the last value.
type coord struct {
	i     int
	t     float64
	scale float64
}

func (g *grid4) coord(a int, x float64) coord { return g.coordFrom(a, x, nil) }

// coordFrom is coord found by a walk from *near, the lower bound of the
// axis's last search, which it updates (by a binary search when near is
// nil): the decodes' sequence counts rise by one and their contexts fall,
// so the walk is a step or two where a binary search is several.
func (g *grid4) coordFrom(a int, x float64, near *int) coord {
	xs := g.axes[a]
	last := xs[len(xs)-1]
	if x > last {
		c := coord{i: len(xs) - 1, scale: 1}
		if last > 0 {
			c.scale = x / last
		}
		return c
	}
	i, t := bracketFrom(xs, x, near)
	return coord{i: i, t: t, scale: 1}
}

// at reads the grid at (x0, x1, x2, x3).
func (g *grid4) at(x0, x1, x2, x3 float64) float64 {
	return g.read(&[4]coord{g.coord(0, x0), g.coord(1, x1), g.coord(2, x2), g.coord(3, x3)})
}

// read is the grid at the point whose coordinates on each axis are cs: at
// once the coordinates are found (a batch's decodes are read at one chunk
// and context, the j-th longest at j + 1 sequences: see coordFrom).
//
// It is the multilinear form: the sum over the cell's 16 corners, in
// corner order (axis 0 the fastest), of the corner's weight, Π over axes
// of 1 − t below or t above, times its value. A corner above an axis
// whose fraction is 0 weighs 0 and is skipped; so is one whose product
// comes out 0. The weights multiply in axis order from 1, and the sum
// runs in corner order, so the result is the same float whichever
// corners are skipped.
func (g *grid4) read(cs *[4]coord) float64 {
	var f [4][2]float64 // each axis's weight below and above
	var off [4][2]int   // and its offset in v
	var n [4]int        // 1, or 2 when the fraction is not 0
	for a, c := range cs {
		f[a][0], off[a][0], n[a] = 1-c.t, c.i*g.stride[a], 1
		if c.t != 0 {
			f[a][1], off[a][1], n[a] = c.t, (c.i+1)*g.stride[a], 2
		}
	}
	sum := 0.0
	for b3 := range n[3] {
		for b2 := range n[2] {
			for b1 := range n[1] {
				for b0 := range n[0] {
					if w := f[0][b0] * f[1][b1] * f[2][b2] * f[3][b3]; w != 0 {
						sum += w * g.v[off[0][b0]+off[1][b1]+off[2][b2]+off[3][b3]]
					}
				}
			}
		}
	}
	return sum * cs[0].scale * cs[1].scale * cs[2].scale * cs[3].scale
}

// natural is the profile on the product of its own axis values, before
// re-indexing by total decode context.
type natural struct {
	axes   [4][]float64 // pc, kp, n, kv (kv > 0)
	stride [4]int
	v      []float64
	known  []bool
	// measured marks the cells a profiled point set (known also marks
	// the filled ones).
	measured []bool
	chunkN   float64
	filled   int
}

func naturalGrid(ps []AttentionPoint) (*natural, error) {
	g := &natural{}
	sets := [4][]float64{{0}, {0}, {0}, nil}
	for _, p := range ps {
		sets[0] = append(sets[0], float64(p.PrefillChunk))
		sets[1] = append(sets[1], float64(p.PrefillContext))
		sets[2] = append(sets[2], float64(p.Decodes))
		if p.DecodeContext > 0 {
			sets[3] = append(sets[3], float64(p.DecodeContext))
		}
		if p.PrefillChunk > 0 {
			g.chunkN = max(g.chunkN, float64(p.Decodes))
		}
	}
	for a := range sets {
		slices.Sort(sets[a])
		g.axes[a] = slices.Compact(sets[a])
	}
	if len(g.axes[0]) < 2 || len(g.axes[2]) < 2 || len(g.axes[3]) == 0 {
		return nil, errors.New("costmodel: Profile.Attention needs points with a prefill chunk and points with decodes at some context")
	}
	g.stride = strides(g.axes)
	g.v = make([]float64, len(g.axes[0])*g.stride[0])
	g.known = make([]bool, len(g.v))
	g.place(ps)
	g.measured = slices.Clone(g.known)
	if err := g.fill(); err != nil {
		return nil, err
	}
	return g, nil
}

// place puts the profiled points on the grid. A coordinate that means
// nothing for a point (the prefill context without a prefill, the decode
// context without decodes) takes every value of its axis; the cell with
// neither prefill nor decode is the empty batch, 0.
func (g *natural) place(ps []AttentionPoint) {
	pos := func(a int, x int) int { i, _ := slices.BinarySearch(g.axes[a], float64(x)); return i }
	set := func(i, j, l, m int, us float64) {
		c := i*g.stride[0] + j*g.stride[1] + l*g.stride[2] + m
		g.v[c], g.known[c] = us, true
	}
	spread := func(a, fixed int) []int {
		if fixed >= 0 {
			return []int{fixed}
		}
		idx := make([]int, len(g.axes[a]))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	for j := range g.axes[1] {
		for m := range g.axes[3] {
			set(0, j, 0, m, 0)
		}
	}
	for _, p := range ps {
		js, ms := spread(1, -1), spread(3, -1)
		if p.PrefillChunk > 0 {
			js = spread(1, pos(1, p.PrefillContext))
		}
		if p.Decodes > 0 {
			ms = spread(3, pos(3, p.DecodeContext))
		}
		for _, j := range js {
			for _, m := range ms {
				set(pos(0, p.PrefillChunk), j, pos(2, p.Decodes), m, p.Us)
			}
		}
	}
}

// fill gives every cell no point timed a value: linear interpolation
// between its nearest known neighbours along one axis, axis by axis in
// fillOrder and pass after pass (each pass reads only the cells known
// before it, so the order of cells does not matter), then extrapolation
// where nothing brackets.
func (g *natural) fill() error {
	for missing := g.missing(); missing > 0; missing = g.missing() {
		progress := false
		for _, a := range fillOrder {
			for g.pass(func(c int) (float64, bool) { return g.interpolated(c, a) }) {
				progress = true
			}
		}
		if !progress && !g.pass(g.extrapolated) {
			return fmt.Errorf("costmodel: Profile.Attention: %d grid cells cannot be filled from the profiled points", missing)
		}
		g.filled += missing - g.missing()
	}
	return nil
}

// fillOrder is the order of the axes fill interpolates along: the decode
// context, the prefill context and the decodes first, the chunk last. A
// profiler refines the chunk axis where it steps (tiles of 128 query
// tokens: beside a decode at 3,888 tokens of context a chunk of 182
// tokens on 3,888 takes 92 µs, one of 273 takes 181), so a cell is
// filled from its own chunk's row where that row brackets it rather than
// across a step.
var fillOrder = [4]int{axK, axKP, axN, axPC}

func (g *natural) missing() int {
	n := 0
	for _, k := range g.known {
		if !k {
			n++
		}
	}
	return n
}

// pass fills every cell estimate can, from the cells known before the
// pass, and reports whether it filled any.
func (g *natural) pass(estimate func(c int) (float64, bool)) bool {
	type fill struct {
		c int
		v float64
	}
	var fills []fill
	for c, k := range g.known {
		if k {
			continue
		}
		if v, ok := estimate(c); ok {
			fills = append(fills, fill{c, v})
		}
	}
	for _, f := range fills {
		g.v[f.c], g.known[f.c] = f.v, true
	}
	return len(fills) > 0
}

// neighbours finds along axis a the nearest known cells below and above
// cell c (-1 where there is none).
func (g *natural) neighbours(c, a int) (pos, lo, hi int) {
	step, n := g.stride[a], len(g.axes[a])
	pos = (c / step) % n
	lo, hi = -1, -1
	for s := pos - 1; s >= 0; s-- {
		if g.known[c+(s-pos)*step] {
			lo = s
			break
		}
	}
	for s := pos + 1; s < n; s++ {
		if g.known[c+(s-pos)*step] {
			hi = s
			break
		}
	}
	return pos, lo, hi
}

// interpolated is cell c read between its nearest known neighbours along
// axis a, if it has one on each side.
func (g *natural) interpolated(c, a int) (float64, bool) {
	pos, lo, hi := g.neighbours(c, a)
	if lo < 0 || hi < 0 {
		return 0, false
	}
	xs, step := g.axes[a], g.stride[a]
	t := (xs[pos] - xs[lo]) / (xs[hi] - xs[lo])
	vlo, vhi := g.v[c+(lo-pos)*step], g.v[c+(hi-pos)*step]
	return vlo + t*(vhi-vlo), true
}

// extrapolated continues along the decodes axis from the two nearest
// known cells below (never falling), else holds the nearest known value
// along the first axis of fillOrder that has one (below before above).
func (g *natural) extrapolated(c int) (float64, bool) {
	pos, lo, _ := g.neighbours(c, axN)
	if lo > 0 {
		step, xs := g.stride[axN], g.axes[axN]
		_, lo2, _ := g.neighbours(c+(lo-pos)*step, axN)
		if lo2 >= 0 {
			v1, v2 := g.v[c+(lo2-pos)*step], g.v[c+(lo-pos)*step]
			slope := max(0, (v2-v1)/(xs[lo]-xs[lo2]))
			return v2 + slope*(xs[pos]-xs[lo]), true
		}
	}
	for _, a := range fillOrder {
		pos, lo, hi := g.neighbours(c, a)
		if lo >= 0 {
			return g.v[c+(lo-pos)*g.stride[a]], true
		}
		if hi >= 0 {
			return g.v[c+(hi-pos)*g.stride[a]], true
		}
	}
	return 0, false
}
