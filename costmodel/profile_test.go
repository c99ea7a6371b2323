package costmodel_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

// rtxBundle is the RTX PRO 6000 / Llama-3.1-8B bundle shipped with
// examples/validate (see its testdata/NOTICE.md: MIT, CASYS Lab at KAIST).
const rtxBundle = "../examples/validate/testdata/rtxpro6000-llama-3.1-8b"

var rtx = sync.OnceValues(func() (*costmodel.ProfileModel, error) {
	p, err := costmodel.ReadProfile(os.DirFS(rtxBundle), "profile", 1)
	if err != nil {
		return nil, err
	}
	p.Layers = 32
	return p.Build()
})

func rtxModel(t *testing.T) *costmodel.ProfileModel {
	t.Helper()
	m, err := rtx()
	require.NoError(t, err)
	return m
}

// raw reads one of the bundle's CSVs as rows of strings.
func raw(t *testing.T, file string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(rtxBundle, "profile", file))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows[1:]
}

// kernel is the profiled time of a kernel at x, µs.
func kernel(t *testing.T, file, name string, x int) float64 {
	t.Helper()
	for _, r := range raw(t, file) {
		if r[0] == name && r[1] == strconv.Itoa(x) {
			v, err := strconv.ParseFloat(r[2], 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("%s has no %s at %d", file, name, x)
	return 0
}

// composed is the NOTICE's sum at a profiled shape, ms: 32 layers of the
// layer's kernels at tokens plus its attention, the once-per-step kernels
// at tokens, the LM head and sampler at seqs.
func composed(t *testing.T, tokens, seqs int, attentionUs float64) float64 {
	layer := attentionUs
	for _, k := range []string{"layernorm", "layernorm", "qkv_proj", "rotary_emb", "o_proj", "gate_up_proj", "act_fn", "down_proj"} {
		layer += kernel(t, "dense.csv", k, tokens)
	}
	us := 32*layer + kernel(t, "dense.csv", "embedding", tokens) + kernel(t, "dense.csv", "final_layernorm", tokens) +
		kernel(t, "per_sequence.csv", "lm_head", seqs) + kernel(t, "per_sequence.csv", "sampler", seqs)
	return us / 1e3
}

func TestReadProfileReadsTheRTXPRO6000Bundle(t *testing.T) {
	p, err := costmodel.ReadProfile(os.DirFS(rtxBundle), "profile", 1)
	require.NoError(t, err)
	assert.Equal(t, costmodel.Provenance{
		GPU: "NVIDIA RTX PRO 6000 Blackwell Server Edition", Model: "meta-llama/Llama-3.1-8B", Variant: "bf16",
		Framework: "vLLM 0.19.0, CUDA 13.0", ProfiledAt: "2026-04-24T12:44:27+00:00",
		Method: "per-kernel CUDA time, mean of 3 iterations, eager mode, profiler 1.0.0",
		Skew:   "least squares over profile/skew.csv: 327 pure-decode rows (α 0.02047), 12657 varlen rows (α 0.05452)",
		Source: "profile",
	}, p.Provenance)
	layer, step, seq := costmodel.LlamaKernels()
	assert.Equal(t, layer, p.LayerKernels)
	assert.Equal(t, step, p.StepKernels)
	assert.Equal(t, seq, p.SequenceKernels)
	assert.Len(t, p.Dense, 9)
	assert.Len(t, p.Dense["qkv_proj"], 152)
	assert.Len(t, p.Attention, 19364)
	assert.Equal(t, 1, p.TP)
	assert.Zero(t, p.Layers, "the profile times one layer: the caller declares the count")
	assert.InDelta(t, 0.02047, p.DecodeSkewAlpha, 5e-6)
	assert.InDelta(t, 0.05452, p.SkewAlpha, 5e-6)
	errorMentions(t, p.Validate(), "Profile.Layers (declared: the profile times one layer) must be >= 1, got 0")
}

// The profile's pooled skew fit is least squares over all of skew.csv;
// ReadProfile fits the two kernels apart with the same estimator, which
// over all the rows gives back meta.yaml's alpha_default (0.0543).
func TestReadProfileSkewFitIsTheProfilesEstimator(t *testing.T) {
	var num, den float64
	for _, r := range raw(t, "skew.csv") {
		tm, _ := strconv.ParseFloat(r[10], 64)
		tx, _ := strconv.ParseFloat(r[11], 64)
		ts, _ := strconv.ParseFloat(r[12], 64)
		if tx > tm {
			num += (ts - tm) * (tx - tm)
			den += (tx - tm) * (tx - tm)
		}
	}
	assert.InDelta(t, 0.0543, num/den, 5e-5)
}

func TestProfileModelPassesTheConformanceCheck(t *testing.T) {
	require.NoError(t, costmodeltest.Check(rtxModel(t)))
}

// At a shape the profile timed, the model is the NOTICE's sum of the
// profiled kernels (to the isotonic smoothing of the dense curves, a few
// µs per layer).
func TestProfileModelIsTheKernelSumAtProfiledShapes(t *testing.T) {
	m := rtxModel(t)
	for _, tc := range []struct {
		name               string
		b                  costmodel.Batch
		tokens, seqs       int
		attentionUs, tolMs float64
	}{
		{"128 decodes at 1,024 tokens (pure decode)", decodes(128, 1024), 128, 128, 404.865, 0.05},
		{"one fresh 2,048-token prompt", prefill(2048), 2048, 1, 172.609, 0.2},
		{"4 decodes at 1,024 beside a 16-token chunk (varlen)", mixed(4, 1024, 16), 20, 5, 29.1517, 0.05},
		// At one token the smoothing pools the LM head's 714 µs with the
		// 687 µs of two sequences, and the dense kernels' first counts.
		{"one decode at 4,096", decodes(1, 4096), 1, 1, 27.157, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := composed(t, tc.tokens, tc.seqs, tc.attentionUs)
			got := milliseconds(m.StepTime(tc.b))
			assert.InDelta(t, want, got, tc.tolMs, "want %.3f ms", want)
		})
	}
}

func milliseconds(d time.Duration) float64 { return float64(d) / 1e6 }

// Decodes of different contexts cost more than uniform ones at their
// mean: DecodeSkewAlpha of the way to all at the longest, per layer.
func TestProfileModelSkewCorrection(t *testing.T) {
	m := rtxModel(t)
	uniform := decodes(128, 1024)
	skewed := decodes(128, 512)
	for i := range 64 {
		skewed.Decode[i] = 1536
	}
	// A(0, 0, 128, 1536) between the profiled 1,152 (449.869) and 1,728 (647.159).
	longest := 449.869 + (1536.0-1152)/(1728-1152)*(647.159-449.869)
	want := 32 * 0.02047 * (longest - 404.865) / 1e3
	got := milliseconds(m.StepTime(skewed) - m.StepTime(uniform))
	assert.InDelta(t, want, got, 0.02*want)
}

// Chunks keep their own context: the tail of a long prompt on 2,048
// tokens beside a fresh prompt costs far less than one chunk of both on
// 2,048 (how LLMServingSim sums them), and more than either alone.
func TestProfileModelPricesEachChunkOnItsOwnContext(t *testing.T) {
	m := rtxModel(t)
	tail := costmodel.Chunk{NewTokens: 310, Context: 2048}
	fresh := costmodel.Chunk{NewTokens: 1700}
	both := m.Price(costmodel.Batch{Prefill: []costmodel.Chunk{tail, fresh}})
	summed := m.Price(costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: 2010, Context: 2048}}})
	alone := m.Price(costmodel.Batch{Prefill: []costmodel.Chunk{fresh}})
	assert.Equal(t, both.Dense, summed.Dense, "the same 2,010 tokens through the dense kernels")
	assert.Less(t, float64(both.Attention), 0.6*float64(summed.Attention))
	assert.Greater(t, both.Attention, alone.Attention)
}

func TestProfileModelWarnsOutsideTheProfile(t *testing.T) {
	m := rtxModel(t)
	assert.Empty(t, m.Price(mixed(127, 3000, 1921)).Warning)
	w := m.Price(decodes(300, 20000)).Warning
	for _, part := range []string{
		"per-sequence kernels read at 300 sequences, beyond the profiled 1–256",
		"300 decodes (profiled up to 256)", "a decode context of 20000 tokens (profiled up to 16384)",
	} {
		assert.Contains(t, string(w), part)
	}
	w = m.Price(prefill(4096)).Warning
	assert.Contains(t, string(w), "per-layer dense kernels read at 4096 tokens, beyond the profiled 1–2048")
	assert.Contains(t, string(w), "a prefill chunk of 4096 tokens (profiled up to 2048)")
	assert.Contains(t, string(m.Price(mixed(200, 100, 16)).Warning), "200 decodes beside a prefill chunk (profiled up to 128)")
}

// Price's parts add up to the step, and StepTime is Price's time.
func TestProfileModelPriceParts(t *testing.T) {
	m := rtxModel(t)
	b := mixed(100, 1500, 700)
	p := m.Price(b)
	assert.Equal(t, m.StepTime(b), p.Time)
	sum := p.Dense + p.Attention + p.Collective + p.PerStep + p.PerSequence + p.Overhead
	assert.InDelta(t, float64(p.Time), float64(sum), 6)
	assert.Zero(t, p.Collective, "TP 1")
	assert.Zero(t, costmodel.ProfiledStep{}, m.Price(costmodel.Batch{}))
}

// A speculative decode's drafts are extra query tokens: more tokens in
// the dense kernels, more logits, and the varlen attention path.
func TestProfileModelPricesVerifiedDrafts(t *testing.T) {
	m := rtxModel(t)
	plain := decodes(32, 1000)
	spec := decodes(32, 1000)
	spec.Verify = make([]int, 32)
	for i := range spec.Verify {
		spec.Verify[i] = 5
	}
	p, s := m.Price(plain), m.Price(spec)
	assert.Greater(t, s.Dense, p.Dense)
	assert.Greater(t, s.PerSequence, p.PerSequence)
	assert.Greater(t, s.Attention, p.Attention)
	assert.Less(t, s.Time, 2*p.Time, "verifying 4 drafts each costs less than a second step")
}

// With tensor parallelism each layer adds two all-reduces of the step's
// activations, declared, not profiled.
func TestProfileTensorParallelAddsTheCollective(t *testing.T) {
	p, err := costmodel.ReadProfile(os.DirFS(rtxBundle), "profile", 1)
	require.NoError(t, err)
	p.Layers, p.TP = 32, 2
	errorMentions(t, p.Validate(), "Profile.Collective.Bandwidth must be a finite number of bytes/s > 0 with TP > 1", "Profile.Collective.Hidden")
	p.Collective = costmodel.Collective{Bandwidth: 100e9, Latency: 10 * time.Microsecond, Hidden: 4096}
	m, err := p.Build()
	require.NoError(t, err)
	b := decodes(128, 1024)
	// 32 layers × 2 × (10 µs + 2·(1/2)·128·4096·2 B / 100 GB/s).
	want := 32 * 2 * (10e-3 + 128*4096*2/100e9*1e3)
	assert.InDelta(t, want, milliseconds(m.Price(b).Collective), 1e-5)
	assert.Contains(t, m.Assumptions()[1], "TP 2 all-reduces: 10µs + ring bytes at 100 GB/s, hidden 4096")
}

func TestProfileValidateNamesEveryProblem(t *testing.T) {
	p := costmodel.Profile{
		Dense:        map[string][]costmodel.KernelPoint{"a": {{X: 2, Us: 1}, {X: 1, Us: -1}}},
		LayerKernels: []string{"a", "b"},
		Attention:    []costmodel.AttentionPoint{{Us: 1}, {PrefillChunk: 0, PrefillContext: 5, Decodes: 1, DecodeContext: 1, Us: 2}},
		SkewAlpha:    2, StepOverhead: -1,
	}
	errorMentions(t, p.Validate(),
		"Profile.Layers", `Profile.Dense["a"][1].X must be > Profile.Dense["a"][0].X`, `Profile.Dense["a"][1].Us must be > 0`,
		`Profile.Dense["b"] has no samples`, "Profile.Attention[0] times an empty batch",
		"Profile.Attention[1] has context without the tokens it belongs to", "Profile.SkewAlpha must be in [0, 1]",
		"Profile.StepOverhead must be >= 0")
	_, err := costmodel.Profile{}.Build()
	errorMentions(t, err, "Profile.LayerKernels is empty")
}

func TestProfileModelStepTimeDoesNotAllocate(t *testing.T) {
	m := rtxModel(t)
	b := mixed(127, 1200, 900)
	b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 300, Context: 2048})
	assert.Zero(t, testing.AllocsPerRun(100, func() { m.StepTime(b) }))
	big := decodes(2000, 100)
	assert.Zero(t, testing.AllocsPerRun(10, func() { m.StepTime(big) }), "beyond 512 decodes too")
}

// Beyond 512 decodes the longest-decodes bound reads the 512 longest:
// still monotone, and a long decode among many short ones still counts.
func TestProfileModelBeyond512Decodes(t *testing.T) {
	m := rtxModel(t)
	b := decodes(1000, 100)
	base := m.StepTime(b)
	b.Decode[999] = 16000
	longer := m.StepTime(b)
	assert.Greater(t, longer, base)
	b.Decode = append(b.Decode, 0)
	assert.GreaterOrEqual(t, m.StepTime(b), longer, "adding a decode never lowers the cost")
}

func TestProfileModelAdjustments(t *testing.T) {
	a := rtxModel(t).Adjustments()
	assert.Equal(t, 19364, a.AttentionPoints)
	assert.Less(t, a.DenseLifted, 10.0, "µs per layer")
	assert.Less(t, a.DenseLowered, 10.0)
	assert.Greater(t, a.AttentionFilled, 0)
}
