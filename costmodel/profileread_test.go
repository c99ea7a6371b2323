package costmodel_test

import (
	"errors"
	"testing"
	"testing/fstest"

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
