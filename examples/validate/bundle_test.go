package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The small bundles made for these tests (testdata/tiny-*, written by
// hand-checkable arithmetic: see testdata/README.md). Their profile is
// flat: a Qwen3-like layer (qk_norm beside Llama's kernels) of 100 µs,
// attention 50 µs, 20 µs once per step, 30 µs per sequence, 2 layers.
// Each run's measured latencies are 1.25 × what those kernels add up to.
var (
	tinyTP2      = filepath.Join("testdata", "tiny-tp2")
	tinyTP2NCCL  = filepath.Join("testdata", "tiny-tp2-nccl")
	tinyRecorded = filepath.Join("testdata", "tiny-recorded")
)

// copyDir copies the bundle src into a temporary directory, applies edit
// to the file at rel (nil edit removes it) and returns the copy.
func copyDir(t *testing.T, src, rel string, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	path := filepath.Join(dir, rel)
	if edit == nil {
		require.NoError(t, os.Remove(path))
		return dir
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(edit(string(b))), 0o644))
	return dir
}

// replayDir reads and replays the bundle in dir with the given flags'
// options, as run does.
func replayDir(t *testing.T, dir string, o options) (measured, *replayed, comparison) {
	t.Helper()
	m, err := readMeasured(dir)
	require.NoError(t, err)
	o.kvBlocks, o.kvFrom, o.kvNote, err = kvBlocks(o, m)
	require.NoError(t, err)
	r, err := replay(o, m)
	require.NoError(t, err)
	return m, r, compare(m.requests, r.records)
}

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

// A second model's kernel list and TP 2, from the bundle alone: model.json
// names qk_norm in the layer, bundle.json declares a collective of 1 GB/s
// and 10 µs, and hidden 1000 × 2 B makes an all-reduce of n tokens 10 +
// 2n µs (a ring moves 2 (TP − 1) / TP = 1 × the message). A prefill of P
// tokens alone is then 2 layers × (100 + 50 + 2 × (10 + 2P)) + 20 + 30 =
// 390 + 8P µs, a decode 398 µs, and each request's TTFT and E2E follow;
// the run's, 1.25 × these, are 20 % off, and the predictions file's, 1.1
// × the run's, 10 %.
func TestTP2BundleOfASecondModel(t *testing.T) {
	m, r, c := replayDir(t, tinyTP2, options{})
	for i, want := range []struct{ in, out int }{{64, 10}, {100, 5}, {200, 2}} {
		rec := r.records[i]
		ttft := us(390 + 8*want.in)
		assert.Equal(t, ttft, rec.FirstToken-rec.Arrival, "request %d TTFT", i)
		assert.Equal(t, ttft+time.Duration(want.out-1)*us(398), rec.LastToken-rec.Arrival, "request %d E2E", i)
	}
	for _, k := range c.metrics() {
		assert.InDelta(t, 20, k.mape, 1e-6, k.name)
	}
	// Every simulated TPOT is 0.8 × the run's, so the step times must be
	// scaled by 1.25 to meet it: the band a sweep should carry is ±25 %,
	// and the declared collective's band model goes with it.
	assert.InDelta(t, 25, c.tpot.factor95, 1e-6)
	assert.InDelta(t, 0.25, impliedBand(c), 1e-12)
	assert.Contains(t, bandLine(c, r), "ModelError{Scale: 0.25}")
	assert.Contains(t, bandLine(c, r), "ProfileModel.CollectiveBand")
	require.NotNil(t, m.predictions)
	assert.InDeltaSlice(t, []float64{10, 10, 10}, m.predictions.mape[:], 1e-6)
	assert.InDeltaSlice(t, []float64{10, 10, 10}, m.predictions.meanDiff[:], 1e-6)
	assert.Contains(t, r.collective, "declared by the bundle, not measured (made up for the test)")
	// The declared figure's band (costmodel.ProfileModel.CollectiveBand):
	// at 1/4 the bandwidth and twice the latency an all-reduce of n tokens
	// is 20 + 8n µs, a prefill of P tokens 2 × (150 + 2 × (20 + 8P)) + 50 =
	// 430 + 32P µs, a decode 462 µs.
	require.Len(t, r.band, 1)
	for i, want := range []struct{ in, out int }{{64, 10}, {100, 5}, {200, 2}} {
		rec := r.band[0].records[i]
		ttft := us(430 + 32*want.in)
		assert.Equal(t, ttft, rec.FirstToken-rec.Arrival, "band: request %d TTFT", i)
		assert.Equal(t, ttft+time.Duration(want.out-1)*us(462), rec.LastToken-rec.Arrival, "band: request %d E2E", i)
	}
	assert.Equal(t, []string{"layernorm", "qkv_proj", "qk_norm", "rotary_emb", "o_proj", "layernorm", "gate_up_proj", "act_fn", "down_proj"}, r.kernels[0])

	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "card.json")
	require.NoError(t, run(&out, []string{"-data", tinyTP2, "-card", path}))
	s := out.String()
	for _, line := range []string{
		"run       vLLM 0.19.0 serving test/qwenish, TP 2: 3 requests offered over 2.0 s (1.0 req/s)",
		"          100 KV blocks, declared by the bundle, not recorded by the run (bundle.json kv_blocks); ",
		"collective TP 2: two all-reduces per layer of tokens × 1000 × 2 B at 1 GB/s and 10 µs each, declared by the bundle, not measured (made up for the test)\n",
		"per-request MAPE  TTFT 20.0 %  TPOT 20.00 %  E2E 20.00 %\n",
		"Othersim's own prediction of this run (predictions.csv): TTFT 10.0 %, TPOT 10.00 %, E2E 10.00 % (means +10.0 %, +10.0 %, +10.0 %)\n",
		"declared collective's band, collective at 1/4 bandwidth, 2× latency (250 MB/s, 20µs): per-request MAPE ",
		"the bundle has no trace-hash-ids.jsonl: the replay has no prompt hashes and runs without prefix reuse",
	} {
		assert.Contains(t, s, line)
	}
	card, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(card), "Collective: TP 2: two all-reduces per layer")
	assert.Contains(t, string(card), "declared by the bundle, not measured")
}

// The same profile at TP 1 has no all-reduce: every step, prefill or
// decode, is 2 × (100 + 50) + 20 + 30 = 350 µs, so TP 2 added 4 × (10 +
// 2P) µs to a prefill of P tokens. The block count is the run's own
// (meta.json kv_cache.num_gpu_blocks); -kvblocks overrides it, saying so.
func TestBundleWhoseRunRecordsTheBlockCount(t *testing.T) {
	_, r, _ := replayDir(t, tinyRecorded, options{})
	_, r2, _ := replayDir(t, tinyTP2, options{})
	for i, in := range []int{64, 100, 200} {
		ttft := r.records[i].FirstToken - r.records[i].Arrival
		assert.Equal(t, us(350), ttft)
		assert.Equal(t, us(4*(10+2*in)), r2.records[i].FirstToken-r2.records[i].Arrival-ttft)
	}
	assert.Equal(t, us(350*10), r.records[0].LastToken-r.records[0].Arrival)
	assert.Empty(t, r.collective)

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-data", tinyRecorded}))
	assert.Contains(t, out.String(), "          100 KV blocks, recorded by the run (vllm/meta.json kv_cache.num_gpu_blocks); ")
	assert.NotContains(t, out.String(), "own prediction", "no predictions file: no comparison line")
	out.Reset()
	require.NoError(t, run(&out, []string{"-data", tinyRecorded, "-kvblocks", "50"}))
	assert.Contains(t, out.String(), "          50 KV blocks, given by -kvblocks (the run recorded 100 (kv_cache.num_gpu_blocks)); ")
}

// A bundle whose block count is neither recorded, nor declared, nor
// given is refused before anything is printed, naming the two files and
// the flag; given, it runs.
func TestBundleWithoutABlockCountIsRefused(t *testing.T) {
	dir := copyDir(t, tinyRecorded, "vllm/meta.json", func(s string) string {
		i := strings.Index(s, `  "kv_cache"`)
		require.Positive(t, i)
		return strings.TrimSuffix(s[:i], ",\n") + "\n}\n"
	})
	var out bytes.Buffer
	err := run(&out, []string{"-data", dir})
	assert.EqualError(t, err, "the KV block count is neither recorded by the run ("+filepath.Join(dir, "vllm", "meta.json")+
		" has no kv_cache.num_gpu_blocks) nor declared by the bundle ("+filepath.Join(dir, "bundle.json")+
		" has no kv_blocks) nor given (-kvblocks): the replay needs the size of vLLM's KV pool, which can change every latency")
	assert.Zero(t, out.Len())
	require.NoError(t, run(&out, []string{"-data", dir, "-kvblocks", "100"}))
	assert.Contains(t, out.String(), "100 KV blocks, given by -kvblocks; ")
}

// Every bundle file is read strictly, and a bundle that contradicts
// itself or lacks what its run needs is refused, naming the file and the
// field.
func TestBundleFilesAreReadStrictly(t *testing.T) {
	for _, c := range []struct {
		name, src, rel, old, new, want string
	}{
		{"TP 2 without a collective", tinyTP2, "bundle.json", `  "collective": {
    "bandwidth_gbps": 1,
    "latency_us": 10,
    "source": "made up for the test"
  },
`, ``, `the run used tensor parallelism 2, and DIR/bundle.json declares no collective: give collective.all_reduce_perf (nccl-tests' output) or bandwidth_gbps and latency_us, and source`},
		{"a collective both measured and declared", tinyTP2, "bundle.json", `"bandwidth_gbps": 1,`, `"all_reduce_perf": "nccl.txt", "bandwidth_gbps": 1,`, `bundle.json: collective: gives both all_reduce_perf (measured) and bandwidth_gbps or latency_us (declared): keep one`},
		{"a declared collective without its latency", tinyTP2, "bundle.json", `"latency_us": 10,`, ``, `bundle.json: collective: want all_reduce_perf (nccl-tests' output, measured) or both bandwidth_gbps and latency_us (declared)`},
		{"a section bundle.json does not know", tinyTP2, "bundle.json", `"collective"`, `"collective_"`, `bundle.json: collective_: unknown field (known: kv_blocks, collective, predictions)`},
		{"a collective without its source", tinyTP2, "bundle.json", `,
    "source": "made up for the test"
  },
  "predictions"`, `
  },
  "predictions"`, `bundle.json: collective.source: missing`},
		{"a collective at 0 GB/s", tinyTP2, "bundle.json", `"bandwidth_gbps": 1`, `"bandwidth_gbps": 0`, `bundle.json: collective.bandwidth_gbps: must be a finite number of GB/s > 0, got 0`},
		{"a block count that is text", tinyTP2, "bundle.json", `"blocks": 100`, `"blocks": "100"`, `bundle.json: kv_blocks.blocks: want an integer, got string`},
		{"predictions outside the bundle", tinyTP2, "bundle.json", `"file": "predictions.csv"`, `"file": "../predictions.csv"`, `bundle.json: predictions.file: want a file inside the bundle`},
		{"a prediction of another request", tinyTP2, "predictions.csv", "0,2,test/qwenish,200,2,", "0,2,test/qwenish,201,2,", `predictions.csv:4: request id 2 has 201 input and 2 output tokens, but the run's request 2 (requests.jsonl line 3) has 200 and 2`},
		{"a prediction of a request the run lacks", tinyTP2, "predictions.csv", "0,2,test/qwenish,", "0,3,test/qwenish,", `predictions.csv:4: request id 3, but the run has 3 requests (0 to 2)`},
		{"a declared count the run contradicts", tinyRecorded, "vllm/meta.json", `"num_requests": 3,`, `"num_requests": 3,`, ``},
		{"a kv_cache block size that is not the engine's", tinyRecorded, "vllm/meta.json", `"block_size": 16,`, `"block_size": 32,`, `vllm/meta.json: kv_cache.num_kv_tokens: is 1600, but num_gpu_blocks 100 × block size 32 is 3200`},
		{"a kv_cache field vLLM does not write", tinyRecorded, "vllm/meta.json", `"block_size": 16,`, `"block_size": 16, "swap_space": 4,`, `vllm/meta.json: kv_cache.swap_space: unknown field`},
		{"a resolved config that contradicts kv_cache", filepath.Join("testdata", "rtx4090-llama-3.1-8b"), "vllm/meta.json", `"num_gpu_blocks": 2588,
      "num_gpu_blocks_override"`, `"num_gpu_blocks": 2000,
      "num_gpu_blocks_override"`, `vllm/meta.json: resolved_config.cache_config.num_gpu_blocks: is 2000, but kv_cache.num_gpu_blocks is 2588`},
		{"a hardware field of the wrong type", filepath.Join("testdata", "rtx4090-llama-3.1-8b"), "vllm/meta.json", `"device_count": 1`, `"device_count": "one"`, `vllm/meta.json: hardware.device_count: want an integer, got string`},
		{"a profiled kernel no list names", tinyRecorded, "model.json", `"qk_norm",`, ``, `model.json: the profile's dense.csv times "qk_norm", which no kernel list names`},
		{"no model.json for a model without a default list", tinyRecorded, "model.json", "", "", `the layer count is neither in `},
	} {
		t.Run(c.name, func(t *testing.T) {
			var dir string
			switch {
			case c.want == "":
				// A run that records 100 blocks and a bundle.json that declares 90.
				dir = copyDir(t, tinyRecorded, "model.json", func(s string) string { return s })
				require.NoError(t, os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"kv_blocks": {"blocks": 90, "derivation": "a guess"}}`), 0o644))
				c.want = "bundle.json: kv_blocks.blocks declares 90, but " + filepath.Join(dir, "vllm", "meta.json") + " records kv_cache.num_gpu_blocks 100: drop the declaration"
			case c.old == "" && c.new == "":
				dir = copyDir(t, c.src, c.rel, nil)
			default:
				dir = copyDir(t, c.src, c.rel, func(s string) string {
					require.Contains(t, s, c.old)
					return strings.Replace(s, c.old, c.new, 1)
				})
			}
			var out bytes.Buffer
			err := run(&out, []string{"-data", dir})
			require.Error(t, err)
			assert.Contains(t, err.Error(), strings.ReplaceAll(c.want, "DIR", dir))
			assert.Zero(t, out.Len(), "refused before anything is printed")
		})
	}
	// Without model.json, -layers gives the count but not the list.
	dir := copyDir(t, tinyRecorded, "model.json", nil)
	err := run(&bytes.Buffer{}, []string{"-data", dir, "-layers", "2"})
	assert.ErrorContains(t, err, "the profile's kernels are not listed: its meta.yaml names no architecture with a default list (llama), and the bundle has no model.json to list them")
}

// Two more real runs, converted into the bundle layout (testdata/NOTICE.md
// says how): Llama-3.1-8B on an RTX 4090, KV-bound (the run records its
// 2,588 blocks; the replay fills them and preempts), and Qwen3-32B at TP
// 2 on two RTX PRO 6000, whose kernel list has qk_norm and whose decode
// step is a quarter all-reduce. With the collective LLMServingSim's
// configuration declares for that machine (16 GB/s, 20 µs) the replay is
// within 1 % E2E; with a spec-sheet figure (64 GB/s, 10 µs) it is about a
// quarter short: a declared collective is a guess the band must cover.
func TestReplaysOfOtherRuns(t *testing.T) {
	for _, c := range []struct {
		dir                 string
		ttft, tpot, e2e     float64 // the MAPE bounds, %
		blocks, preemptions int
	}{
		{"rtx4090-llama-3.1-8b", 3, 2, 1, 2588, 1},
		{"rtxpro6000-qwen3-32b-tp2", 5, 2, 1.5, 27000, 0},
	} {
		m, r, cmp := replayDir(t, filepath.Join("testdata", c.dir), options{})
		t.Logf("%s: MAPE TTFT %.2f %%, TPOT %.2f %%, E2E %.2f %%; %d preemptions, peak %d blocks", c.dir,
			cmp.ttft.mape, cmp.tpot.mape, cmp.e2e.mape, r.preemptions, r.peakKV)
		assert.Zero(t, cmp.notOK, c.dir)
		assert.LessOrEqual(t, cmp.ttft.mape, c.ttft, c.dir)
		assert.LessOrEqual(t, cmp.tpot.mape, c.tpot, c.dir)
		assert.LessOrEqual(t, cmp.e2e.mape, c.e2e, c.dir)
		assert.Equal(t, c.blocks, r.cfg.Engine.KVBlocks, c.dir)
		assert.GreaterOrEqual(t, r.preemptions, c.preemptions, c.dir)
		assert.Zero(t, r.outside, "%s: every step inside the profiled grid", c.dir)
		require.NotNil(t, m.predictions, c.dir)
	}
	spec := copyDir(t, filepath.Join("testdata", "rtxpro6000-qwen3-32b-tp2"), "bundle.json", func(s string) string {
		require.Contains(t, s, `"bandwidth_gbps": 16, "latency_us": 20`)
		return strings.Replace(s, `"bandwidth_gbps": 16, "latency_us": 20`, `"bandwidth_gbps": 64, "latency_us": 10`, 1)
	})
	_, _, cmp := replayDir(t, spec, options{})
	t.Logf("Qwen3-32B TP 2 at 64 GB/s, 10 µs: MAPE TTFT %.2f %%, TPOT %.2f %%, E2E %.2f %%", cmp.ttft.mape, cmp.tpot.mape, cmp.e2e.mape)
	assert.Greater(t, cmp.e2e.mape, 20.0)
	assert.Less(t, cmp.e2e.simulated.mean, cmp.e2e.measured.mean, "a faster collective, shorter requests")
}

// Without model.json, a profile whose meta.yaml says architecture llama
// takes Llama's kernel list, and the layer count must be given: the same
// 32 layers as the shipped model.json give the same replay.
func TestLlamaBundleWithoutModelJSON(t *testing.T) {
	dir := copyDir(t, shipped, "model.json", nil)
	err := run(&bytes.Buffer{}, []string{"-data", dir})
	assert.EqualError(t, err, "the layer count is neither in "+filepath.Join(dir, "model.json")+" nor given (-layers): the profile times one decoder layer")
	_, r, c := replayDir(t, dir, options{layers: 32})
	_, _, want := replayDir(t, shipped, options{})
	assert.Equal(t, want, c)
	assert.Equal(t, "profile/meta.yaml's architecture llama (costmodel.LlamaKernels)", r.kernelsFrom)
	assert.Equal(t, "given by -layers", r.layersFrom)
}

// A collective measured by nccl-tests: tiny-tp2-nccl is tiny-tp2 with an
// all_reduce_perf table of two GPUs in place of the declared figure, its
// out-of-place times 10 µs + size / (1 GB/s), the declared figure
// exactly. Read linearly between its sizes, it prices every step as the
// declared figure does, so the two replays are the same request by
// request; a measured collective carries no declared band.
func TestMeasuredCollectiveFromAllReducePerf(t *testing.T) {
	_, declared, _ := replayDir(t, tinyTP2, options{})
	_, r, c := replayDir(t, tinyTP2NCCL, options{})
	assert.Equal(t, declared.records, r.records)
	assert.InDelta(t, 20, c.e2e.mape, 1e-6)
	assert.Empty(t, r.band)
	assert.Contains(t, r.collective, "measured by nccl-tests all_reduce_perf (nccl/all_reduce_perf.txt: 2 GPUs, 1000 to 1024000 B;")

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-data", tinyTP2NCCL}))
	assert.NotContains(t, out.String(), "collective's band")
	assert.NotContains(t, out.String(), "CollectiveBand")
	assert.NotContains(t, out.String(), "not measured")

	// A table of three GPUs does not price a TP 2 run.
	dir := copyDir(t, tinyTP2NCCL, "nccl/all_reduce_perf.txt", func(s string) string {
		rank := "#  Rank  1 Group  0 Pid  1000 on test-node device  1 [0000:31:00] Test GPU\n"
		require.Contains(t, s, rank)
		return strings.Replace(s, rank, rank+"#  Rank  2 Group  0 Pid  1000 on test-node device  2 [0000:4b:00] Test GPU\n", 1)
	})
	err := run(&bytes.Buffer{}, []string{"-data", dir})
	assert.EqualError(t, err, filepath.Join(dir, "bundle.json")+": collective.all_reduce_perf: nccl/all_reduce_perf.txt measured 3 GPUs, but the run used tensor parallelism 2")
}
