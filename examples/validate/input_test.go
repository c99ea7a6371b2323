package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyBundle copies the shipped data into a temporary directory, applies
// edit to the file at rel (a path inside the bundle) and returns the
// copy's directory.
func copyBundle(t *testing.T, rel string, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), bundle)
	require.NoError(t, os.CopyFS(dir, os.DirFS(shipped)))
	path := filepath.Join(dir, rel)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(edit(string(b))), 0o644))
	return dir
}

// replace edits by replacing old, which must occur, with new.
func replace(t *testing.T, old, new string) func(string) string {
	return func(s string) string {
		require.Contains(t, s, old)
		return strings.Replace(s, old, new, 1)
	}
}

// Issue 32: -kvblocks 1 panicked (a percentile of an empty set: every
// request is refused, as every prompt is at or above MaxModelLen, the
// pool's 16 tokens). Now the run says so, naming the bound against the
// prompts' size (3,998 tokens at most: 250 blocks hold 4,000 and leave
// room for an output token), prints no percentile and fails.
func TestRunWhereEveryRequestIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.json")
	var out bytes.Buffer
	err := run(&out, []string{"-data", shipped, "-kvblocks", "1", "-card", path})
	require.EqualError(t, err, "none of the 300 simulated requests ended ok and whole: nothing to compare, and no card is written")
	s := out.String()
	assert.Contains(t, s, "          1 KV blocks, given by -kvblocks; the replay's peak use was 0 blocks (0 %)\n")
	assert.True(t, strings.HasSuffix(s, "\nnothing to compare: none of the 300 simulated requests ended ok and whole\n"+
		"  300 rejected: engine: prompt too long (Input >= MaxModelLen leaves no room for an output token): MaxModelLen 16\n"+
		"    each has a prompt of 262 to 3998 tokens, at or above MaxModelLen, the pool's 16 tokens (1 KV blocks × block size 16);\n"+
		"    -kvblocks 250 or more admits the longest of them\n"), s)
	for _, never := range []string{"p50", "MAPE", "NaN", "mean (ms)"} {
		assert.NotContains(t, s, never)
	}
	assert.NoFileExists(t, path)
}

// One block short of the largest request (prompt + output 4,765 tokens:
// 298 blocks of 16), that request alone is cut at MaxModelLen, the pool's
// 4,752 tokens (served, as vLLM serves it, with 4,752 − prompt output
// tokens), and the comparison is on the other 299, saying so.
func TestRunWhereOneRequestIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.json")
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-data", shipped, "-kvblocks", "297", "-card", path}))
	s := out.String()
	assert.True(t, strings.HasSuffix(s, "\nwarning: 1 of the 300 simulated requests did not end ok, or were cut at MaxModelLen, and are left out of the comparison:\n"+
		"  1 length-capped: served, and stopped at MaxModelLen with fewer output tokens than the run's\n"+
		"    each asks for prompt + output = 4765 tokens, more than MaxModelLen, the pool's 4752 tokens (297 KV blocks × block size 16);\n"+
		"    -kvblocks 298 or more serves the longest of them whole\n"), s)
	assert.Contains(t, s, "per-request MAPE  TTFT ")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var card struct{ Notes []string }
	require.NoError(t, json.Unmarshal(b, &card))
	assert.Contains(t, card.Notes, "1 of the 300 simulated requests did not end ok, or were cut at MaxModelLen, and are left out of the comparison: "+
		"1 length-capped: served, and stopped at MaxModelLen with fewer output tokens than the run's "+
		"each asks for prompt + output = 4765 tokens, more than MaxModelLen, the pool's 4752 tokens (297 KV blocks × block size 16); "+
		"-kvblocks 298 or more serves the longest of them whole.")

	var whole bytes.Buffer
	require.NoError(t, run(&whole, []string{"-data", shipped, "-kvblocks", "298"}))
	assert.NotContains(t, whole.String(), "warning")
}

// Issue 32: an empty requests.jsonl panicked (index out of range). Now it
// is an error naming the file, as is one of blank lines only.
func TestRunRefusesAnEmptyRequestsFile(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "blank lines": "\n  \n\n"} {
		dir := copyBundle(t, "vllm/requests.jsonl", func(string) string { return content })
		var out bytes.Buffer
		err := run(&out, []string{"-data", dir})
		assert.EqualError(t, err, filepath.Join(dir, "vllm", "requests.jsonl")+": no requests: a run to compare against needs at least one line", name)
		assert.Zero(t, out.Len(), name)
	}
}

// Issue 32: "max_num_seqs": "lots" ran on defaults. meta.json is read as
// strictly as a scenario: every wrong type, unknown field, repeated field,
// missing or meaningless required value is refused, naming the file and
// the JSON field.
func TestRunRefusesABadMetaJSON(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{`"max_num_seqs": 128`, `"max_num_seqs": "lots"`, `engine_kwargs.max_num_seqs: want an integer, got string`},
		{`"max_num_seqs": 128`, `"max_num_seqs": 1.5`, `engine_kwargs.max_num_seqs: want an integer, got number 1.5`},
		{`"max_num_seqs": 128,`, ``, `engine_kwargs.max_num_seqs: missing: the run must state it`},
		{`"max_num_seqs": 128`, `"max_num_seqs": 0`, `engine_kwargs.max_num_seqs: must be >= 1, got 0`},
		{`"max_num_seqs": 128`, `"max_num_seqs": null`, `engine_kwargs.max_num_seqs: is null: the run must state it (vLLM's default depends on the hardware)`},
		{`"max_num_batched_tokens": 2048`, `"max_num_batched_tokens": -2048`, `engine_kwargs.max_num_batched_tokens: must be >= 1, got -2048`},
		{`"tensor_parallel_size": 1`, `"tensor_parallel_size": 0`, `engine_kwargs.tensor_parallel_size: must be >= 1, got 0`},
		{`"seed": 42`, `"seed": 42, "block_size": 0`, `engine_kwargs.block_size: must be >= 1, got 0`},
		{`"seed": 42`, `"seed": 42, "enable_chunked_prefill": "yes"`, `engine_kwargs.enable_chunked_prefill: want true or false, got string`},
		{`"seed": 42`, `"seed": 42, "scheduling_policy": "priority"`, `engine_kwargs.scheduling_policy: unknown field (known: model, tensor_parallel_size, `},
		{`"seed": 42`, `"seed": 42, "seed": 43`, `engine_kwargs.seed: given twice`},
		{`"num_requests": 300`, `"num_requests": 299`, `num_requests is 299, but ` + filepath.Join("DIR", "vllm", "requests.jsonl") + ` holds 300 requests`},
		{`"schema_version": 1`, `"schema_version": 2`, `schema_version: this reader knows schema 1, got 2`},
		{`"schema_version": 1,`, ``, `schema_version: missing: the run must state it`},
		{`"tick_seconds": 1.0`, `"tick_seconds": 1.0, "gpu": "x"`, `gpu: unknown field (known: schema_version, model, vllm_version, engine_kwargs, `},
		{`"model": "meta-llama/Llama-3.1-8B",` + "\n  \"vllm_version\"", `"model": 8,` + "\n  \"vllm_version\"", `model: want a string, got number`},
		{"", `{"schema_version": 1, "engine_kwargs": []}`, `engine_kwargs: want a JSON object, got [`},
		{"", `[]`, `want a JSON object, got [`},
		{"", ``, `unexpected end of JSON`},
		{"\"tick_seconds\": 1.0\n}", "\"tick_seconds\": 1.0\n}\n{}", `trailing data after the object`},
	} {
		edit := replace(t, c.old, c.new)
		if c.old == "" {
			edit = func(string) string { return c.new } // the whole file
		}
		dir := copyBundle(t, "vllm/meta.json", edit)
		var out bytes.Buffer
		err := run(&out, []string{"-data", dir})
		want := filepath.Join(dir, "vllm", "meta.json") + ": " + strings.ReplaceAll(c.want, "DIR", dir)
		if assert.Error(t, err, c.new) {
			assert.True(t, strings.HasPrefix(err.Error(), want), "%s:\n got %s\nwant %s", c.new, err, want)
		}
		assert.Zero(t, out.Len(), c.new)
	}
}

// A replica the engine cannot be is refused before the replay, naming
// the file and the field each engine_kwargs argument sets.
func TestRunRefusesAReplicaTheEngineCannotBe(t *testing.T) {
	dir := copyBundle(t, "vllm/meta.json", replace(t, `"max_num_seqs": 128`, `"max_num_seqs": 100000`))
	var out bytes.Buffer
	err := run(&out, []string{"-data", dir})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "the replica "+filepath.Join(dir, "vllm", "meta.json")+
		" describes (engine_kwargs.max_num_seqs is MaxSeqs, max_num_batched_tokens MaxBatchedTokens, block_size BlockSize; the KV blocks, declared by the bundle, not recorded by the run, KVBlocks): "), err.Error())
	assert.Contains(t, err.Error(), "MaxSeqs must be <= 16384")
	assert.Zero(t, out.Len())
}

// A run of several engines behind a load balancer is not replayed into
// one.
func TestRunRefusesDataParallelism(t *testing.T) {
	dir := copyBundle(t, "vllm/meta.json", replace(t, `"data_parallel_size": 1`, `"data_parallel_size": 2`))
	err := run(&bytes.Buffer{}, []string{"-data", dir})
	assert.EqualError(t, err, "the run used data parallelism 2: it ran 2 engines behind a load balancer, and the replay is of one")
}

// A run of one request has no span: the run line gives no rate rather
// than NaN.
func TestRunOfOneRequest(t *testing.T) {
	first := func(s string) string { return s[:strings.IndexByte(s, '\n')+1] }
	dir := copyBundle(t, "vllm/requests.jsonl", first)
	b, err := os.ReadFile(filepath.Join(dir, "trace-hash-ids.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace-hash-ids.jsonl"), []byte(first(string(b))), 0o644))
	dir2 := copyBundle(t, "vllm/meta.json", replace(t, `"num_requests": 300`, `"num_requests": 1`))
	require.NoError(t, os.Rename(filepath.Join(dir2, "vllm", "meta.json"), filepath.Join(dir, "vllm", "meta.json")))
	// The published prediction of request 0 alone (its row is the first).
	b, err = os.ReadFile(filepath.Join(dir, "llmservingsim-sim.csv"))
	require.NoError(t, err)
	lines := strings.SplitAfterN(string(b), "\n", 3)
	require.True(t, strings.HasPrefix(lines[1], "0,0,"), lines[1])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "llmservingsim-sim.csv"), []byte(lines[0]+lines[1]), 0o644))
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-data", dir}))
	assert.Contains(t, out.String(), "run       vLLM 0.19.0 serving meta-llama/Llama-3.1-8B: 1 requests offered at one instant (no rate), started 2026-04-25T18:47:18.273385Z\n")
	assert.NotContains(t, out.String(), "NaN")
}
