package costmodel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// tiny is a well-formed profile of two kernels, a 2×2 attention grid and
// a skew table, in LLMServingSim's bundle layout (CSVs under tp<N>/).
func tiny() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"p/meta.yaml": file(`# a profile
gpu: Test GPU
model: 'org/model'
vllm_version: 0.19.0
profiled_at: '2026-01-02T03:04:05+00:00'
architecture: llama
engine_effective:
  enforce_eager: true
tp_degrees: [1, 2]
skew_fit:
  enabled: true
  per_tp:
    2:
      alpha_default: 0.25
`),
		"p/tp2/dense.csv":        file("layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,64,20\n"),
		"p/tp2/per_sequence.csv": file("layer,sequences,time_us\nlm_head,1,100\nlm_head,64,120\n"),
		"p/tp2/attention.csv": file("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n" +
			"16,0,0,0,5\n0,0,1,16,6\n16,0,1,16,8\n"),
	}
}

func TestReadProfileReadsTheBundleLayout(t *testing.T) {
	p, err := costmodel.ReadProfile(tiny(), "p", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, p.TP)
	assert.Equal(t, "Test GPU", p.Provenance.GPU)
	assert.Equal(t, "org/model", p.Provenance.Model)
	assert.Equal(t, "per-kernel CUDA time, eager mode", p.Provenance.Method)
	assert.Equal(t, 0.25, p.SkewAlpha, "meta.yaml's pooled fit for TP 2, without skew.csv")
	assert.Equal(t, 0.25, p.DecodeSkewAlpha)
	assert.Equal(t, []costmodel.KernelPoint{{X: 1, Us: 10}, {X: 64, Us: 20}}, p.Dense["qkv_proj"])
	assert.Len(t, p.Attention, 3)
}

// Every error names the file, the line and the column.
func TestReadProfileErrorsNameFileLineAndColumn(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"a time that is not a number", "p/tp2/dense.csv", "layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,64,fast\n",
			`p/tp2/dense.csv:3:13: time_us: "fast" is not a time in µs > 0`},
		{"a zero count", "p/tp2/per_sequence.csv", "layer,sequences,time_us\nlm_head,0,100\n",
			"p/tp2/per_sequence.csv:2:9: sequences: 0 is not a count > 0"},
		{"a missing column", "p/tp2/dense.csv", "layer,tokens\nqkv_proj,1\n",
			`p/tp2/dense.csv:1:1: the header ["layer" "tokens"] has no column "time_us"`},
		{"a row of the wrong width", "p/tp2/dense.csv", "layer,tokens,time_us\nqkv_proj,1\n",
			"p/tp2/dense.csv:2:1: wrong number of fields"},
		{"a stray quote", "p/tp2/dense.csv", "layer,tokens,time_us\nqkv\"proj,1,2\n",
			`p/tp2/dense.csv:2:4: bare " in non-quoted-field`},
		{"a kernel timed twice", "p/tp2/dense.csv", "layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,1,11\n",
			"p/tp2/dense.csv:3:10: tokens: qkv_proj at 1 tokens was already timed at line 2"},
		{"an attention point timed twice", "p/tp2/attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,0,5\n16,0,0,0,6\n",
			"p/tp2/attention.csv:3:1: prefill_chunk: the point [16 0 0 0] was already timed at line 2"},
		{"an empty batch", "p/tp2/attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n0,0,0,0,5\n",
			"p/tp2/attention.csv:2:1: prefill_chunk: the row times an empty batch"},
		{"decode context without decodes", "p/tp2/attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,64,5\n",
			"p/tp2/attention.csv:2:8: kv_decode: 64 tokens of decode context without decodes"},
		{"a header only", "p/tp2/attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n",
			"p/tp2/attention.csv:1:1: no rows after the header"},
		{"an empty file", "p/tp2/dense.csv", "", "p/tp2/dense.csv:1:1: the file is empty"},
		{"a tab in meta.yaml", "p/meta.yaml", "gpu: x\nskew_fit:\n\tenabled: true\n",
			"p/meta.yaml:3:1: a tab in the indentation"},
		{"a line that is not key: value", "p/meta.yaml", "gpu: x\njust words\n",
			`p/meta.yaml:2:1: expected "key: value" or "key:", got "just words"`},
		{"an alpha that is not a number", "p/meta.yaml", "skew_fit:\n  per_tp:\n    2:\n      alpha_default: high\n",
			`p/meta.yaml:4:22: skew_fit.per_tp.2.alpha_default: "high" is not a number`},
		{"a skew time that is not a number", "p/tp2/skew.csv", "regime,t_mean_us,t_max_us,t_skew_us\npure,1,2,x\n",
			`p/tp2/skew.csv:2:10: t_skew_us: "x" is not a time in µs > 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tiny()
			fsys[tc.file] = &fstest.MapFile{Data: []byte(tc.content)}
			_, err := costmodel.ReadProfile(fsys, "p", 2)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			var pe *costmodel.ProfileError
			assert.True(t, errors.As(err, &pe), "a *ProfileError")
		})
	}
}

func TestReadProfileNamesAMissingFile(t *testing.T) {
	fsys := tiny()
	delete(fsys, "p/tp2/attention.csv")
	_, err := costmodel.ReadProfile(fsys, "p", 2)
	errorMentions(t, err, "p/tp2/attention.csv")
}

// The skew corrections are fitted per kernel from skew.csv when it is
// there: t_skew − t_mean = α (t_max − t_mean), least squares.
func TestReadProfileFitsTheSkewOfEachKernel(t *testing.T) {
	fsys := tiny()
	fsys["p/tp2/skew.csv"] = &fstest.MapFile{Data: []byte("regime,n,t_mean_us,t_max_us,t_skew_us,alpha\n" +
		"pure,2,10,20,11,0.1\npure,2,10,30,12,0.1\nmixed,2,10,20,13,0.3\nmixed,4,10,9,9.5,\n")}
	p, err := costmodel.ReadProfile(fsys, "p", 2)
	require.NoError(t, err)
	assert.InDelta(t, 0.1, p.DecodeSkewAlpha, 1e-12)
	assert.InDelta(t, 0.3, p.SkewAlpha, 1e-12, "the row whose longer context timed faster carries no skew")
	assert.Contains(t, p.Provenance.Skew, "2 pure-decode rows (α 0.1), 1 varlen rows (α 0.3)")
}

// qwenish is a profile of a Qwen3-like decoder (a qk_norm kernel Llama
// has not) with flat kernels, so that a step's time is plain arithmetic,
// and a model.json naming its kernels.
func qwenish() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	dense := "layer,tokens,time_us\n"
	for _, k := range []struct {
		name string
		us   int
	}{{"layernorm", 1}, {"qkv_proj", 10}, {"qk_norm", 2}, {"rotary_emb", 3}, {"o_proj", 5}, {"gate_up_proj", 20}, {"act_fn", 4}, {"down_proj", 15}, {"embedding", 7}, {"final_layernorm", 1}} {
		dense += fmt.Sprintf("%s,1,%d\n%s,64,%d\n", k.name, k.us, k.name, k.us)
	}
	return fstest.MapFS{
		"p/meta.yaml":        file("model: org/qwenish\narchitecture: qwen3\n"),
		"p/dense.csv":        file(dense),
		"p/per_sequence.csv": file("layer,sequences,time_us\nlm_head,1,100\nlm_head,64,100\nsampler,1,30\nsampler,64,30\n"),
		"p/attention.csv": file("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n" +
			"16,0,0,0,5\n0,0,1,16,6\n16,0,1,16,8\n"),
		"model.json": file(`{"model": "org/qwenish", "layers": 3, "hidden_size": 5120, "dtype_bytes": 2,
  "layer_kernels": ["layernorm", "qkv_proj", "qk_norm", "rotary_emb", "o_proj", "layernorm", "gate_up_proj", "act_fn", "down_proj"],
  "step_kernels": ["embedding", "final_layernorm"],
  "sequence_kernels": ["lm_head", "sampler"]}`),
	}
}

// A second model's kernel list, read from model.json: one decode step of
// one sequence at 16 tokens of context is 3 layers × (the layer's kernels,
// layernorm twice: 1+10+2+3+5+1+20+4+15 = 61 µs, + attention 6 µs) + the
// step's 7 + 1 µs + the sequence's 100 + 30 µs = 339 µs.
func TestDecoderLayoutPricesASecondModel(t *testing.T) {
	fsys := qwenish()
	p, err := costmodel.ReadProfile(fsys, "p", 1)
	require.NoError(t, err)
	assert.Empty(t, p.LayerKernels, "meta.yaml's qwen3 has no default list")
	d, err := costmodel.ReadDecoderLayout(fsys, "model.json")
	require.NoError(t, err)
	require.NoError(t, d.Apply(&p))
	assert.Equal(t, 3, p.Layers)
	assert.Equal(t, 5120, p.Collective.Hidden)
	assert.Equal(t, 2, p.Collective.DTypeBytes)
	m, err := p.Build()
	require.NoError(t, err)
	assert.Equal(t, 339*time.Microsecond, m.StepTime(decodes(1, 16)))
}

// Without the layout's qk_norm the Llama list would drop a kernel the
// profiler timed: an error, not a silently cheaper step.
func TestReadProfileRefusesAKernelTheLlamaListLeavesOut(t *testing.T) {
	fsys := qwenish()
	fsys["p/meta.yaml"] = &fstest.MapFile{Data: []byte("model: org/qwenish\narchitecture: llama\n")}
	_, err := costmodel.ReadProfile(fsys, "p", 1)
	errorMentions(t, err, `p/meta.yaml: architecture llama (costmodel.LlamaKernels): the profile's dense.csv times "qk_norm", which no kernel list names: a step would leave it out (name it in layer_kernels (once per call) or step_kernels of a model.json that describes this model)`)
}

// model.json is read strictly: each bad field is named with its file.
func TestDecoderLayoutErrorsNameTheFileAndField(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{`"layers": 3`, `"layers": "3"`, `model.json: layers: want an integer, got string`},
		{`"layers": 3`, `"layers": 0`, `model.json: layers must be >= 1, got 0`},
		{`"layers": 3,`, ``, `model.json: layers: missing`},
		{`"dtype_bytes": 2`, `"dtype_bytes": 2, "heads": 64`, `model.json: unknown field "heads"`},
		{`"step_kernels": ["embedding", "final_layernorm"]`, `"step_kernels": "embedding"`, `model.json: step_kernels: want a list of strings, got string`},
		{`"qk_norm", `, ``, `model.json: the profile's dense.csv times "qk_norm", which no kernel list names: a step would leave it out (name it in layer_kernels (once per call) or step_kernels)`},
		{`"act_fn", `, `"act_fn", "mlp_norm", `, `model.json: layer_kernels[8] "mlp_norm": the profile's dense.csv has no such kernel (it has act_fn, down_proj, embedding, final_layernorm, gate_up_proj, layernorm, o_proj, qk_norm, qkv_proj, rotary_emb)`},
		{`["lm_head", "sampler"]`, `["lm_head", "sampler", "embedding"]`, `model.json: sequence_kernels[2] "embedding" is also in step_kernels`},
		{`["embedding", "final_layernorm"]`, `["embedding", "embedding", "final_layernorm"]`, `model.json: step_kernels[1] "embedding" is listed twice`},
		{`"org/qwenish", "layers"`, `"org/other", "layers"`, `model.json: model "org/other", but the profile (meta.yaml) is of "org/qwenish"`},
		{`"sampler"]}`, `"sampler"]} {}`, `model.json: trailing data after the object`},
	} {
		fsys := qwenish()
		s := string(fsys["model.json"].Data)
		require.Contains(t, s, tc.old, tc.old)
		fsys["model.json"].Data = []byte(strings.Replace(s, tc.old, tc.new, 1))
		p, err := costmodel.ReadProfile(fsys, "p", 1)
		require.NoError(t, err)
		d, err := costmodel.ReadDecoderLayout(fsys, "model.json")
		if err == nil {
			err = d.Apply(&p)
		}
		errorMentions(t, err, tc.want)
	}
}
