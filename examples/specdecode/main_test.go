package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// small are arguments that run in about a second: two replications of a
// 3-minute window, K 0 and 4 at α 0.7, two loads of the hypothesis test,
// one heavier drafter.
var small = []string{"-k", "4", "-alpha", "0.7", "-reps", "2", "-horizon", "3m", "-blocks", "2", "-loads", "1,2.5", "-drafters", "4ms", "-out", ""}

// The report is pinned by a golden file run with small arguments.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, small))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

// options parses args as the program does.
func options_(t *testing.T, args ...string) options {
	t.Helper()
	o, err := parse(&bytes.Buffer{}, args)
	require.NoError(t, err)
	return o
}

// Without speculation a chunk is one token: the retokenized ITL is the
// per-chunk ITL. With it a chunk's gap is never below its tokens' share
// of it, so per chunk is never below retokenized. And the mean tokens a
// step of K drafts emits lies within 4 standard errors of
// (1 − α^(K+1))/(1 − α) in every run at the probe load.
func TestStudiesAgreeWithTheDomain(t *testing.T) {
	o := options_(t, "-k", "2,4,8", "-alpha", "0.5,0.9", "-reps", "3", "-horizon", "3m")
	studies, err := runStudies(o)
	require.NoError(t, err)
	for _, s := range studies {
		r := s.result
		for i, v := range r.Values {
			p, k := r.Probe[i], int(v)
			if k == 0 {
				assert.Equal(t, p.ITL, p.ITLRetokenized, "K = 0: one token a chunk")
				for _, run := range p.Runs {
					assert.Zero(t, run.Speculation.Drafted)
				}
				continue
			}
			assert.GreaterOrEqual(t, p.ITL.P99.Center, p.ITLRetokenized.P99.Center, "K = %d, α = %g", k, s.alpha)
			want := theory(k, s.alpha)
			for _, run := range p.Runs {
				sp := run.Speculation
				require.Greater(t, sp.FullSteps, 500, "K = %d, α = %g", k, s.alpha)
				assert.InDelta(t, want, sp.MeanAccepted, 4*sp.MeanAcceptedSE, "K = %d, α = %g: %d full steps", k, s.alpha, sp.FullSteps)
				assert.LessOrEqual(t, sp.Accepted, sp.Drafted)
			}
		}
	}
}

// With α = 1 and a free drafter every draft is accepted: a step of K = 4
// drafts emits 5 tokens, and the table says so beside the theory.
func TestAllAcceptedEmitsKPlusOne(t *testing.T) {
	o := options_(t, "-k", "4", "-alpha", "1", "-draft-step", "0", "-reps", "2", "-horizon", "3m")
	studies, err := runStudies(o)
	require.NoError(t, err)
	p := studies[0].result.Probe[1]
	for _, run := range p.Runs {
		assert.Equal(t, 5.0, run.Speculation.MeanAccepted)
		assert.Equal(t, 1.0, run.Speculation.AcceptanceRate)
	}
	var out bytes.Buffer
	writeTable(&out, studies, o)
	assert.Regexp(t, `\n  4  1 .* 5\.000  \[5\.000, 5\.000\]   5\.000 `, out.String())
}

// The longest step: K = 0's is engine.LargestStep's mixed step (one
// decode beside a 2,047-token chunk: 45 + 20 + 2047 × 0.035 = 136.645
// ms); verified drafts displace prefill tokens at the same rate, so K
// drafts add only the drafter's K steps. At 2 ms a draft, K = 4 is
// 144.645 ms and K = 8 152.645 ms, past the 150 ms bound; K = 4 passes it
// from (150 − 136.645)/4 = 3.339 ms a draft.
func TestLongestStep(t *testing.T) {
	o := options_(t)
	mixed, _ := engine.LargestStep(engine.Config{}, nil, 0, 1)
	got, decodes := longestStep(o, 0, o.drafter)
	assert.Equal(t, mixed, got)
	assert.Equal(t, 136645*time.Microsecond, got)
	assert.Equal(t, 1, decodes)
	got, _ = longestStep(o, 4, o.drafter)
	assert.Equal(t, 144645*time.Microsecond, got)
	got, _ = longestStep(o, 8, o.drafter)
	assert.Equal(t, 152645*time.Microsecond, got)
	d, ok := crossing(o)
	require.True(t, ok)
	assert.Equal(t, 3339*time.Microsecond, d)

	// A dearer verifier: at 0.1 ms a verified draft, 31 decodes of 4
	// drafts add 12.4 ms beside 1,893 prefill tokens.
	o = options_(t, "-verify", "100us", "-draft-step", "0", "-shapes", "")
	got, decodes = longestStep(o, 4, o.drafter)
	assert.Equal(t, 45*time.Millisecond+time.Duration(4*decodes)*100*time.Microsecond+20*time.Millisecond+time.Duration(2048-5*decodes)*35*time.Microsecond, got)
	assert.Equal(t, 32, decodes)
}

func TestTheory(t *testing.T) {
	assert.InDelta(t, 2.7731, theory(4, 0.7), 1e-4)
	assert.InDelta(t, 1.9375, theory(4, 0.5), 1e-12)
	assert.Equal(t, 5.0, theory(4, 1))
	assert.Equal(t, 1.0, theory(4, 0))
	assert.Equal(t, 1.0, theory(0, 0.7))
}

// A drafter whose K steps push the longest step past the ITL bound makes
// speculation cost attainment at every load that meets a prefill: the
// report says where, and B's knee lies below A's in every block (here B
// misses at 0.5 req/s already and A meets at 1, so every block pairs the
// bounds: -0.5 req/s).
func TestHeavyDrafterStopsPaying(t *testing.T) {
	var out bytes.Buffer
	args := append(append([]string{"-draft-step", "4.5ms"}, small...), "-loads", "0.5,1")
	require.NoError(t, run(&out, args))
	s := out.String()
	assert.Contains(t, s, "stops paying: B's attainment is below A's at 0.50, 1.00 req/s (the longest step with 4 drafts is 154.65 ms, past the 150ms ITL bound)")
	assert.Contains(t, s, "paired difference -0.500 [-0.500, -0.500] req/s (2 blocks, 2 of them through a knee beyond the loads, its bound)")
	assert.Contains(t, s, "verdict:   not improved: ")
}

// -out writes the knee-against-K chart as PNG and SVG, and the
// hypothesis's card.
func TestRunWritesTheChart(t *testing.T) {
	dir := t.TempDir()
	args := append(append([]string{}, small...), "-out", dir, "-drafters", "")
	var out bytes.Buffer
	require.NoError(t, run(&out, args))
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, "specdecode-knee"+ext)
		assert.Contains(t, out.String(), "wrote "+path+"\n")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if ext == ".png" {
			img, err := png.Decode(bytes.NewReader(b))
			require.NoError(t, err)
			assert.Equal(t, 1063, img.Bounds().Dx())
			continue
		}
		for _, want := range []string{"α = 0.7: knee, 95 % interval as error bars", "Speculation.Tokens (draft tokens a step)"} {
			assert.Contains(t, string(b), want)
		}
	}
}

func TestHelpNamesTheDrafter(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	for _, want := range []string{"-draft-step", "2ms a draft token", "2601.11580", "n-gram"} {
		assert.Contains(t, out.String(), want)
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"-k -1":               "-k: -1 is not a draft length",
		"-k x":                `-k: "x"`,
		"-alpha 1.5":          "not an acceptance probability in [0, 1]",
		"-alpha ''":           "-alpha: no acceptance to sweep",
		"-claim-alpha -0.1":   "not an acceptance probability",
		"-horizon 0":          "-horizon must be > 0",
		"-probe 0":            "-probe: 0 is not a positive rate",
		"-loads 1,NaN":        "-loads: NaN is not a positive rate",
		"-claim-k 0":          "-claim-k: 0 drafts is no speculation to test",
		"-drafters -1ms":      "-drafters: -1ms is not a draft step",
		"-draft-step -1ms":    "Drafting.DraftStep must be >= 0",
		"-draft-overhead NaN": "Drafting.Overhead must be a finite fraction",
		"-itl-series both":    "-itl-series must be chunk or token",
		"-reps -1":            "Sweep.Reps",
		"-blocks 1":           "Experiment.Blocks",
		"-k 2048":             "-k, -claim-k: 2048 drafts a decode do not fit the 2048-token budget",
		"x":                   "unexpected arguments",
		"-threshold Inf":      "Threshold must be finite",
		"-verify -1us":        "VerifyPerToken must be >= 0",
		"-shapes roofline":    `-shapes: "roofline" is not "atlas"`,
		"-verify 100us":       "-verify 100µs with -shapes atlas: the shape alternatives are calibrated to Frozen's defaults",
		"-model-error 1.5":    "ModelError.Scale must be in [0, 1)",
		"-band-blocks 1":      "-band-blocks must be 0 (every block) or >= 2",
	} {
		var out bytes.Buffer
		fields := strings.Fields(args)
		for i, f := range fields {
			if f == "''" {
				fields[i] = ""
			}
		}
		assert.ErrorContains(t, run(&out, fields), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// The band's slower model (every step time ×1.1, the drafter's too)
// flips the verdict, and the arithmetic says why: the claim's longest
// step, 144.645 ms, becomes 159.11 ms, past the 150 ms ITL bound, and
// every request whose decoding meets another's prefill has a worst gap
// past it; K = 0's 2,000-token mixed step, 45 + 20 + 70 = 135 ms, becomes
// 148.5 ms, under it (only two prompts' chunks in one step, 136.645 ×
// 1.1 = 150.31 ms, pass it). So under that model B misses on most
// requests at any load while A keeps most.
func TestSlowerModelPutsTheClaimPastTheITLBound(t *testing.T) {
	o := options_(t)
	slow := func(k int) sim.Summary {
		cfg := baseConfig(o)
		cfg.Window = sim.Window{Warmup: 30 * time.Second, Horizon: 5 * time.Minute}
		d := drafter{step: time.Duration(1.1 * float64(o.drafter.step))}
		cfg.Speculation = speculation(k, o.claimAlpha, d)
		cfg.Model = costmodel.Scaled{Model: costmodel.Frozen{}, Factor: 1.1}
		src, err := analysis.Poisson(lengths).Source(1, 1)
		require.NoError(t, err)
		s, err := sim.Run(cfg, src, nil)
		require.NoError(t, err)
		return s
	}
	b, a := slow(o.claimK), slow(0)
	longest, _ := longestStep(o, o.claimK, o.drafter)
	assert.Equal(t, 144645*time.Microsecond, longest)
	assert.LessOrEqual(t, b.WorstITL.Max, 1.1*float64(longest)/1e6+1e-9, "no gap beyond the longest step")
	assert.Greater(t, b.WorstITL.Median, 150.0, "most requests meet a prefill")
	assert.Less(t, b.Attainment, 0.1)
	assert.InDelta(t, 1.1*135, a.WorstITL.Median, 1, "K = 0: one decode step beside a 2,000-token prompt")
	assert.LessOrEqual(t, a.WorstITL.Max, 1.1*136.645+1e-9)
	assert.Greater(t, a.Attainment, 0.8)
	assert.GreaterOrEqual(t, float64(b.Misses.ITL), 0.95*float64(b.Offered-b.Good), "B's misses are ITL misses")
}

// The card of the hypothesis: B's speculation and the ITL series its SLO
// gates, A as the baseline, B's curve with tokens a step near the theory,
// the acceptance rate (accepted over drafted: below α) and the ITL per
// token below the ITL per chunk, the knee against K with its probe's
// tokens a step, the verdict, and the command that reproduces it.
func TestRunWritesTheCard(t *testing.T) {
	dir := t.TempDir()
	args := append(append([]string{}, small...), "-out", dir, "-drafters", "", "-itl-series", "token")
	var out bytes.Buffer
	require.NoError(t, run(&out, args))
	md, err := os.ReadFile(filepath.Join(dir, "specdecode-card.md"))
	require.NoError(t, err)
	assert.Contains(t, out.String(), "wrote "+filepath.Join(dir, "specdecode-card.md")+"\n")
	for _, want := range []string{
		"**Claim.** K = 4 at α = 0.7 (draft model 2ms a draft) raises the knee by at least 5 % over K = 0",
		"## Result: system B's curve",
		"## Result: dial sweep over `Speculation.Tokens`",
		"| attainment | tokens a step | ITL p99 per token (ms) |",
		"### A/B verdict:",
		"### Speculative decoding",
		"- The ITL bound gates every token's gap, each chunk's gap divided by its tokens",
		"Speculation (`sim.Speculation`): speculative decoding, K = 4 drafts a step, i.i.d. acceptance α = 0.7, a draft model (2ms per draft).",
		"## System A (the baseline)",
		"| command | `go run ./examples/specdecode " + strings.Join(args, " ") + "` |",
	} {
		assert.Contains(t, string(md), want)
	}
	var card struct {
		SLO struct {
			ITLSeries string `json:"itl_series"`
		} `json:"slo"`
		System  struct{ Speculation string } `json:"system"`
		Base    struct{ Speculation string } `json:"baseline_system"`
		Results struct {
			Points []struct {
				Load        float64
				ITLP99      struct{ Center float64 } `json:"itl_p99_ms"`
				Speculation *struct {
					MeanAccepted   struct{ Center float64 } `json:"mean_accepted"`
					AcceptanceRate struct{ Center float64 } `json:"acceptance_rate"`
					ITLTokenP99    struct{ Center float64 } `json:"itl_token_p99_ms"`
				}
			}
		}
	}
	js, err := os.ReadFile(filepath.Join(dir, "specdecode-card.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &card))
	assert.Equal(t, "per token (retokenized)", card.SLO.ITLSeries)
	assert.Contains(t, card.System.Speculation, "K = 4")
	assert.Empty(t, card.Base.Speculation, "A does not speculate")
	require.NotEmpty(t, card.Results.Points)
	for _, p := range card.Results.Points {
		s := p.Speculation
		require.NotNil(t, s, "load %v", p.Load)
		assert.InDelta(t, theory(4, 0.7), s.MeanAccepted.Center, 0.1, "load %v", p.Load)
		assert.InDelta(t, 0.7*(1-math.Pow(0.7, 4))/(4*0.3), s.AcceptanceRate.Center, 0.03, "load %v", p.Load)
		assert.LessOrEqual(t, s.ITLTokenP99.Center, p.ITLP99.Center, "load %v", p.Load)
	}
}

// A claim outside the grid's α is swept once more for its card, which
// then has no dial sweep.
func TestCardOfAClaimOffTheGrid(t *testing.T) {
	dir := t.TempDir()
	args := append(append([]string{}, small...), "-out", dir, "-drafters", "", "-claim-alpha", "0.9")
	var out bytes.Buffer
	require.NoError(t, run(&out, args))
	md, err := os.ReadFile(filepath.Join(dir, "specdecode-card.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "i.i.d. acceptance α = 0.9")
	assert.Contains(t, string(md), "### Speculative decoding")
	assert.NotContains(t, string(md), "dial sweep")
}
