package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/idlabels"
)

// syntheticFingerprint is the fingerprint of 500 requests of a Synthetic
// workload with prefixes p.
func syntheticFingerprint(t *testing.T, p PrefixReuse) string {
	g, err := NewSynthetic(Synthetic{Seed: 11, Count: 500, Arrival: Arrival{Rate: 2},
		Lengths: Independent{Input: LogNormalMean(1500, 0.8), Output: Uniform{Center: 200, RangeRatio: 0.5}}, Prefix: p})
	require.NoError(t, err)
	sum, n, err := Fingerprint(g)
	require.NoError(t, err)
	require.Equal(t, 500, n)
	return sum
}

// conversationFingerprint is the fingerprint of the turns of 40
// conversations with prefixes p, served by the toy driver in 1 s each,
// and that of the same turns with their ids read as labels (idlabels:
// which blocks are equal, not the ids' numbers).
func conversationFingerprint(t *testing.T, p PrefixReuse) (string, string) {
	src, err := NewConversations(Conversations{Seed: 11, Count: 40, Arrival: Arrival{Rate: 1},
		Turns: Uniform{Center: 4, RangeRatio: 0.5}, FirstInput: LogNormalMean(600, 0.5),
		UserInput: Uniform{Center: 100, RangeRatio: 0.5}, Output: Uniform{Center: 200, RangeRatio: 0.5},
		Think: Think{Mean: 5 * time.Second}, Prefix: p})
	require.NoError(t, err)
	h, l := NewHasher(), NewHasher()
	var labels idlabels.Labels
	for _, rec := range serve(t, src, second, nil) {
		r := rec.Request
		h.Add(r)
		r.PrefixHashes = labels.Of(r.PrefixHashes)
		l.Add(r)
	}
	return h.Sum(), l.Sum()
}

// Uniform prefixes (Zipf 0) give the requests they gave before Zipf
// popularity existed, byte for byte: these fingerprints were taken from
// the generator of commit 3456f7f, for fresh prompts (Synthetic) and for
// prompts that extend a previous turn (Conversations; retaken when each
// turn's ids came to cover its answer, HashesCoverOutput). The
// conversations' labels fingerprint (their ids read as labels) was taken
// at main f03ae2c, before a turn's ids stopped skipping the one its
// prompt's partial block would have had: the raw one moved then, the
// labels did not.
func TestPrefixUniformUnchanged(t *testing.T) {
	for _, c := range []struct {
		name                            string
		p                               PrefixReuse
		synthetic, conversation, labels string
	}{
		{"LowReuse", LowReuse,
			"sha256:142a24c6ff0bc27e6b86ca3ac818567b6bd9bb434d9f7726ecd4bdf0138c0b73",
			"sha256:53c723796d90068785bdaeccbf88663b1649e3177ec86749a5bf132db00f6264",
			"sha256:1426dea898be5d08bbd402b3e8b97783e08a6b14555758de1856509bf9b5d85b"},
		{"HighReuse", HighReuse,
			"sha256:561901cb4a7f501bb43a5816a451b38f2ecc89ec676bebd08928f0f683a60560",
			"sha256:b579568977dfe6cce5a33f933f3eb9da007ef80ec64c5c001bd76924395d9669",
			"sha256:a6473f05d548d8f1c542bd1abdaa030abc73f11a1e1de1fb6f4e7325edb3f52b"},
		{"16-token blocks", PrefixReuse{Groups: 7, PrefixTokens: 1000, Probability: 0.6, BlockTokens: 16},
			"sha256:b8e06f29bb8819232140e66b1ccde0ea74832bb6ae88677ffc8d5e17b27ec00e",
			"sha256:564b364b691fa44e67c4d022469dbe880d96d940c7461202acd161a382d62097",
			"sha256:9cda304faa775f0b15351fe1fe610d1f034639b740a8a87f8ca24950a5384302"},
	} {
		assert.Equal(t, c.synthetic, syntheticFingerprint(t, c.p), "%s, Synthetic", c.name)
		raw, labels := conversationFingerprint(t, c.p)
		assert.Equal(t, c.conversation, raw, "%s, Conversations", c.name)
		assert.Equal(t, c.labels, labels, "%s, Conversations' ids as labels", c.name)
	}
}

// groupCounts draws n requests whose system prompt is one 16-token block
// shared among groups groups of Zipf popularity s, and counts the requests
// of each group (the group is the first id).
func groupCounts(t *testing.T, groups int, s float64, n int) []int {
	g, err := NewSynthetic(Synthetic{Seed: 21, Count: n, Arrival: Arrival{Rate: 1}, Lengths: Fixed(1, 1),
		Prefix: PrefixReuse{Groups: groups, PrefixTokens: 16, Probability: 1, BlockTokens: 16, Zipf: s}})
	require.NoError(t, err)
	counts := make([]int, groups)
	for _, r := range drain(t, g) {
		require.Len(t, r.PrefixHashes, 2)
		require.Less(t, r.PrefixHashes[0], uint64(groups))
		counts[r.PrefixHashes[0]]++
	}
	return counts
}

// zipfProbabilities is P(group k) = (k+1)^−s / Σⱼ (j+1)^−s.
func zipfProbabilities(groups int, s float64) []float64 {
	p := make([]float64, groups)
	sum := 0.0
	for k := range p {
		p[k] = math.Pow(float64(k+1), -s)
		sum += p[k]
	}
	for k := range p {
		p[k] /= sum
	}
	return p
}

// chiSquare is Pearson's statistic of counts against probabilities p.
func chiSquare(counts []int, p []float64) float64 {
	n := 0
	for _, c := range counts {
		n += c
	}
	x2 := 0.0
	for k, c := range counts {
		e := float64(n) * p[k]
		x2 += (float64(c) - e) * (float64(c) - e) / e
	}
	return x2
}

// Over many requests, the groups' frequencies follow 1/(k+1)^s normalised:
// Pearson's chi-square over the 20 groups stays below its 99.9th
// percentile with 19 degrees of freedom (43.8), for s = 0 (uniform) as for
// Zipf exponents on both sides of 1. The same counts are refused against
// an exponent 0.05 off, so the check has the power to see a wrong one.
func TestPrefixZipfFrequencies(t *testing.T) {
	const groups, n = 20, 100_000
	critical := distuv.ChiSquared{K: groups - 1}.Quantile(0.999)
	for _, s := range []float64{0, 0.5, 0.8, 1, 1.5} {
		counts := groupCounts(t, groups, s, n)
		x2 := chiSquare(counts, zipfProbabilities(groups, s))
		assert.Less(t, x2, critical, "s=%g: chi-square %.1f, counts %v", s, x2, counts)
		off := chiSquare(counts, zipfProbabilities(groups, s+0.05))
		assert.Greater(t, off, critical, "s=%g against s=%g: chi-square %.1f", s, s+0.05, off)
	}
}

// fixedUint64 is a random source that always returns v.
type fixedUint64 uint64

func (v fixedUint64) Uint64() uint64 { return uint64(v) }

// withFloat64 returns a *rand.Rand whose Float64 is u (a multiple of
// 2⁻⁵³ in [0, 1)).
func withFloat64(u float64) *rand.Rand {
	return rand.New(fixedUint64(uint64(u * (1 << 53))))
}

// The table is an exact inverse CDF: with 2 groups and s = 1 the weights
// are 1 and 1/2, so u < 2/3 chooses group 0 and u >= 2/3 group 1; groups
// whose weight underflows to 0 (a huge s) are never chosen.
func TestPrefixZipfInverseCDF(t *testing.T) {
	b := newBlockIDs(PrefixReuse{Groups: 2, PrefixTokens: 16, Probability: 1, Zipf: 1})
	for _, c := range []struct {
		u    float64
		want uint64
	}{{0, 0}, {0.5, 0}, {0.666, 0}, {0.667, 1}, {0.75, 1}, {1 - 0x1p-53, 1}} {
		u := math.Round(c.u*(1<<53)) / (1 << 53)
		assert.Equal(t, c.want, b.group(withFloat64(u)), "u=%v", u)
	}
	b = newBlockIDs(PrefixReuse{Groups: 3, PrefixTokens: 16, Probability: 1, Zipf: 1e6})
	assert.Equal(t, []float64{1, 1, 1}, b.cumulative)
	assert.Equal(t, uint64(0), b.group(withFloat64(1-0x1p-53)))
}

func TestPrefixZipfValidate(t *testing.T) {
	for _, s := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		err := PrefixReuse{Groups: 4, PrefixTokens: 512, Probability: 1, Zipf: s}.Validate()
		assert.ErrorContains(t, err, "workload: PrefixReuse.Zipf must be finite and >= 0 (0 for uniform), got", "s=%v", s)
	}
	assert.NoError(t, PrefixReuse{Groups: 4, PrefixTokens: 512, Probability: 1, Zipf: 0.3}.Validate())
}

func TestPrefixString(t *testing.T) {
	assert.Equal(t, "256-token system prompt shared with p=0.2 among 32 groups, 512-token blocks", LowReuse.String(),
		"uniform popularity prints as it did before Zipf existed")
	assert.Equal(t, "4096-token system prompt shared with p=1 among 256 groups of Zipf popularity s=0.8, 16-token blocks",
		PrefixReuse{Groups: 256, PrefixTokens: 4096, Probability: 1, BlockTokens: 16, Zipf: 0.8}.String())
}

// The shared prompts are exactly the leading ids the workload's requests
// of each group carry.
func TestSharedPromptsAreTheGroupsPrefixes(t *testing.T) {
	p := PrefixReuse{Groups: 3, PrefixTokens: 100, Probability: 1, BlockTokens: 16}
	warm := p.SharedPrompts()
	require.Len(t, warm, 3)
	for g, w := range warm {
		require.Equal(t, 96, w.InputTokens, "6 full blocks of 16")
		require.Len(t, w.PrefixHashes, 6)
		require.Equal(t, 16, w.PrefixBlockTokens)
		require.Equal(t, uint64(6*g), w.PrefixHashes[0])
	}
	g, err := NewSynthetic(Synthetic{Seed: 1, Count: 50, Arrival: Arrival{Rate: 1}, Lengths: Fixed(50, 5), Prefix: p})
	require.NoError(t, err)
	for _, r := range drain(t, g) {
		found := false
		for _, w := range warm {
			found = found || slices.Equal(w.PrefixHashes, r.PrefixHashes[:6])
		}
		require.True(t, found, "request %d's prefix %v is a shared prompt's", r.ID, r.PrefixHashes[:6])
	}
	assert.Nil(t, PrefixReuse{}.SharedPrompts())
	assert.Nil(t, PrefixReuse{Groups: 2, PrefixTokens: 10, Probability: 1, BlockTokens: 16}.SharedPrompts())
}

// TestCountFrom holds countFrom, sixteen ids a pass, to the plain loop on
// every length up to 70 and starts next to the largest id (it wraps).
func TestCountFrom(t *testing.T) {
	for n := range 71 {
		for _, x := range []uint64{0, 1000, ^uint64(0) - 5} {
			got, want := make([]uint64, n), make([]uint64, n)
			countFrom(got, x)
			for k := range want {
				want[k] = x + uint64(k)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("countFrom(%d ids, %d) = %v, want %v", n, x, got, want)
			}
		}
	}
}

// TestGroupIDsAreCounted holds prompts whose shared ids are copied from
// their group's kept ids (blockIDs.sharedIDs) to the same prompts with
// every id counted, over random configurations and prompt lengths,
// prompts shorter than the shared prefix among them, and holds each to
// its promise of at most two runs of consecutive ids (PrefixTwoRuns).
func TestGroupIDsAreCounted(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 5))
	kept := 0
	for range 200 {
		cfg := PrefixReuse{Groups: 1 + rng.IntN(20), PrefixTokens: rng.IntN(2_000), Probability: rng.Float64(),
			BlockTokens: []int{0, 1, 16, 100}[rng.IntN(4)], Zipf: []float64{0, 0.8}[rng.IntN(2)]}
		fast, slow := newBlockIDs(cfg), newBlockIDs(cfg)
		slow.groupIDs = nil
		seed := rng.Uint64()
		rf, rs := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		for range 50 {
			input := 1 + rng.IntN(3_000)
			got, want := fast.prompt(rf, input, 0), slow.prompt(rs, input, 0)
			if !slices.Equal(got, want) {
				t.Fatalf("%+v, a prompt of %d tokens: %v, counted %v", cfg, input, got, want)
			}
			n := 0 // its runs of consecutive ids, at most the two promised
			for u := 0; u < len(got); u += ascend.Each(got[u:]) {
				n++
			}
			if n > 2 {
				t.Fatalf("%+v, a prompt of %d tokens: %d runs in %v, two promised", cfg, input, n, got)
			}
		}
		if fast.groupIDs != nil {
			kept++
		}
	}
	assert.Greater(t, kept, 100)
}

// TestTurnIDsAtOnce holds a conversation turn's ids drawn at once, its
// prompt's and its answer's (prompt or extendIn over both, as
// ChatSource draws them), to the same drawn in two steps, its prompt's
// full blocks and then the rest (extendIn again): the ids a turn's
// prompt's partial block is drawn are its answer's first run on, over
// random configurations and turns; and holds each turn's ids to their
// promise that they rise (ascend.Rising).
func TestTurnIDsAtOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 13))
	for range 200 {
		cfg := PrefixReuse{Groups: 1 + rng.IntN(20), PrefixTokens: rng.IntN(2_000), Probability: rng.Float64(),
			BlockTokens: []int{0, 1, 16, 100}[rng.IntN(4)], Zipf: []float64{0, 0.8}[rng.IntN(2)]}
		one, two := newBlockIDs(cfg), newBlockIDs(cfg)
		seed := rng.Uint64()
		r1, r2 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		var convs [][2][]uint64 // each conversation's last ids, both ways
		var tokens []int        // and its last prompt and answer, in tokens
		for range 60 {
			input, output := rng.IntN(3_000), rng.IntN(500)
			i := rng.IntN(len(convs) + 1)
			if i < len(convs) {
				input += tokens[i] // a next turn's prompt: the last turn's and more
			} else {
				input += cfg.PrefixTokens // a first one's: the system prompt and more (Conversations')
			}
			full := input - input%cfg.block()
			var got, want []uint64
			if i < len(convs) {
				prev := tokens[i]
				got = one.extendIn(convs[i][0], prev, input+output)
				want = two.extendIn(two.extendIn(convs[i][1], prev, full), full, input+output)
				convs[i], tokens[i] = [2][]uint64{got, want}, input+output
			} else {
				got = one.prompt(r1, input+output, 0)
				want = two.extendIn(two.prompt(r2, full, 0), full, input+output)
				convs, tokens = append(convs, [2][]uint64{got, want}), append(tokens, input+output)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%+v, a turn of %d + %d tokens: %v at once, %v in two steps", cfg, input, output, got, want)
			}
			for k := 1; k < len(got); k++ {
				if got[k] <= got[k-1] {
					t.Fatalf("%+v: ids %v do not rise at %d", cfg, got, k)
				}
			}
		}
	}
}

// TestFirstAboveIsTheSearch holds firstAbove, the guide table's answer,
// to its twin, the binary search: Zipf tables of 1 to 600 groups and
// tables with equal neighbours, asked at random weights, at every
// table value and at the floats either side of it.
func TestFirstAboveIsTheSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	for range 300 {
		n := 1 + rng.IntN(600)
		cum := zipfTable(n, []float64{0.1, 0.8, 1.5, 3}[rng.IntN(4)])
		if rng.IntN(3) == 0 { // plateaus and steps of any size
			sum := 0.0
			for k := range cum {
				if rng.IntN(4) > 0 {
					sum += rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
				}
				cum[k] = sum
			}
			if sum == 0 {
				cum[n-1] = 1
			}
		}
		guide := zipfGuide(cum)
		total := cum[n-1]
		us := []float64{0, math.Nextafter(total, 0)}
		for range 200 {
			us = append(us, rng.Float64()*total)
		}
		for _, c := range cum {
			us = append(us, c, math.Nextafter(c, 0), math.Nextafter(c, math.Inf(1)))
		}
		for _, u := range us {
			if u < 0 || u >= total {
				continue
			}
			if got, want := firstAbove(cum, guide, u), firstAboveSearch(cum, u); got != want {
				t.Fatalf("%d groups, u = %v of %v: guide %d, search %d", n, u, total, got, want)
			}
		}
	}
}

// TestPromptsAreTheirOwn holds prompts cut from one slab (promptIDs) to
// arrays of their own: each of capacity its length, an append to one
// leaving the others as they were, over prompts short and long (past the
// slab's half, an array of its own).
func TestPromptsAreTheirOwn(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 8))
	b := newBlockIDs(FleetHighReuse)
	var got, want [][]uint64
	for range 100 {
		input := 1 + rng.IntN(4_000)
		if rng.IntN(20) == 0 {
			input = 16 * (promptSlab/2 + rng.IntN(promptSlab))
		}
		ids := b.prompt(rng, input, 0)
		require.Len(t, ids, blocks(input, 16))
		require.Equal(t, len(ids), cap(ids))
		got, want = append(got, ids), append(want, slices.Clone(ids))
	}
	for k := range got {
		got[k] = append(got[k], 1<<60, 1<<61)
	}
	for k := range got {
		require.Equal(t, append(want[k], 1<<60, 1<<61), got[k], "prompt %d", k)
	}
}

// TestRecycledPromptsAreFresh holds prompts some of which are written
// into arrays handed back (recycle, reused: each prompt's, after a random
// number of later prompts, as sim's runner hands them back at their
// requests' ends) to the same prompts each in an array of its own, id
// for id, over random configurations: groups, Zipf or uniform,
// private prompts, lengths that vary (a kept array too short for the
// next), blocks smaller than the system prompt or not; and requires
// arrays reused.
func TestRecycledPromptsAreFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 5))
	reused := 0
	for range 200 {
		cfg := PrefixReuse{Groups: 1 + rng.IntN(20), PrefixTokens: rng.IntN(2_000), Probability: []float64{1, rng.Float64()}[rng.IntN(2)],
			BlockTokens: []int{0, 1, 16, 100}[rng.IntN(4)], Zipf: []float64{0, 0.8}[rng.IntN(2)]}
		fast, slow := newBlockIDs(cfg), newBlockIDs(cfg)
		seed := rng.Uint64()
		rf, rs := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		type held struct {
			ids  []uint64
			want []uint64
			left int
		}
		var live []held
		handedBack := map[*uint64]bool{}
		fixed := 1 + rng.IntN(1_000)
		for range 100 {
			input := cfg.PrefixTokens + fixed
			if rng.IntN(2) == 0 {
				input = cfg.PrefixTokens + 1 + rng.IntN(1_500)
			}
			got := fast.prompt(rf, input, 0)
			want := slow.prompt(rs, input, 0)
			if !slices.Equal(got, want) {
				t.Fatalf("%+v, a prompt of %d tokens: %v, in an array of its own %v", cfg, input, got, want)
			}
			if len(got) > 0 {
				if handedBack[&got[0]] {
					reused++
					delete(handedBack, &got[0])
				}
			}
			live = append(live, held{got, slices.Clone(got), rng.IntN(12)})
			k := 0
			for _, h := range live {
				if !slices.Equal(h.ids, h.want) {
					t.Fatalf("%+v: a live prompt's ids %v were written over: %v", cfg, h.want, h.ids)
				}
				if h.left--; h.left >= 0 {
					live[k] = h
					k++
					continue
				}
				if len(h.ids) > 0 {
					handedBack[&h.ids[0]] = true
				}
				fast.readySpare() // as generatorInto.Recycle
				fast.recycle(h.ids)
			}
			live = live[:k]
		}
	}
	assert.Greater(t, reused, 2_000, "prompts written into arrays handed back")
}
