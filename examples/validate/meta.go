package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
)

// metaSchema is the version of meta.json this reader knows.
const metaSchema = 1

// metaField is one field meta.json may hold: where its value goes, and
// whether the run must state it. A field servesim does not use is still
// read into a value of its type, so that a wrong type is refused rather
// than ignored.
type metaField struct {
	name     string
	dst      any
	required bool
}

// readMeta reads meta.json as strictly as the scenario decoder reads a
// scenario: an unknown field, a field given twice, a wrong type, trailing
// data, a missing required value or a value that cannot mean anything is
// an error naming the file and the field (engine_kwargs.max_num_seqs). An
// engine argument servesim does not know is refused too: it might change
// the schedule the replay would then get wrong.
func readMeta(path string) (runMeta, error) {
	var meta runMeta
	b, err := os.ReadFile(path)
	if err != nil {
		return meta, err
	}
	fail := func(field, format string, a ...any) error {
		if field == "" {
			return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
		}
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(format, a...))
	}
	var (
		schema, requests                   *int
		tp, dp, seqs, batched, block       *int
		chunked, prefix                    *bool
		datasetPath, datasetHash, finished string
		tick                               float64
		engineRaw                          json.RawMessage
		kvRaw, hwRaw, resolvedRaw          json.RawMessage
	)
	top := []metaField{
		{"schema_version", &schema, true},
		{"model", &meta.Model, false},
		{"vllm_version", &meta.VLLMVersion, false},
		{"engine_kwargs", &engineRaw, true},
		{"dataset_path", &datasetPath, false},
		{"dataset_hash", &datasetHash, false},
		{"num_requests", &requests, false},
		{"started_at", &meta.StartedAt, false},
		{"finished_at", &finished, false},
		{"tick_seconds", &tick, false},
		{"kv_cache", &kvRaw, false},
		{"hardware", &hwRaw, false},
		{"resolved_config", &resolvedRaw, false},
	}
	if err := decodeObject(b, "", top, fail); err != nil {
		return meta, err
	}
	if schema == nil || *schema != metaSchema {
		got := "null"
		if schema != nil {
			got = fmt.Sprint(*schema)
		}
		return meta, fail("schema_version", "this reader knows schema %d, got %s", metaSchema, got)
	}
	var engineModel, dtype, kvDtype string
	var expert bool
	var maxLen, seed *int
	engine := []metaField{
		{"model", &engineModel, false},
		{"tensor_parallel_size", &tp, false},
		{"data_parallel_size", &dp, false},
		{"enable_expert_parallel", &expert, false},
		{"max_num_seqs", &seqs, true},
		{"max_num_batched_tokens", &batched, true},
		{"max_model_len", &maxLen, false},
		{"dtype", &dtype, false},
		{"kv_cache_dtype", &kvDtype, false},
		{"seed", &seed, false},
		{"block_size", &block, false},
		{"enable_chunked_prefill", &chunked, false},
		{"enable_prefix_caching", &prefix, false},
	}
	if err := decodeObject(engineRaw, "engine_kwargs.", engine, fail); err != nil {
		return meta, err
	}
	e := &meta.Engine
	e.TP, e.DP = 1, 1 // vLLM's defaults
	for _, v := range []struct {
		name     string
		p        *int
		dst      *int
		required bool
	}{
		{"engine_kwargs.tensor_parallel_size", tp, &e.TP, false},
		{"engine_kwargs.data_parallel_size", dp, &e.DP, false},
		{"engine_kwargs.max_num_seqs", seqs, &e.MaxNumSeqs, true},
		{"engine_kwargs.max_num_batched_tokens", batched, &e.MaxBatchedTokens, true},
		{"engine_kwargs.block_size", block, nil, false},
		{"num_requests", requests, &meta.Requests, false},
	} {
		switch {
		case v.p == nil && v.required:
			return meta, fail(v.name, "is null: the run must state it (vLLM's default depends on the hardware)")
		case v.p == nil:
			continue
		case *v.p < 1:
			return meta, fail(v.name, "must be >= 1, got %d", *v.p)
		}
		if v.dst != nil {
			*v.dst = *v.p
		}
	}
	e.BlockSize, e.ChunkedPrefill, e.PrefixCaching = block, chunked, prefix
	if err := meta.readKVCache(kvRaw, resolvedRaw, fail); err != nil {
		return meta, err
	}
	if err := meta.readHardware(hwRaw, fail); err != nil {
		return meta, err
	}
	return meta, nil
}

// decodeObject decodes the JSON object b into fields, refusing an unknown
// field, a field given twice, a wrong type, a missing required field and
// trailing data; prefix is the object's path ("engine_kwargs.").
func decodeObject(b []byte, prefix string, fields []metaField, fail func(field, format string, a ...any) error) error {
	return decodeFields(b, prefix, "the run", fields, fail)
}

// decodeFields is decodeObject for a file whose missing fields who must
// state ("the run", "the bundle").
func decodeFields(b []byte, prefix, who string, fields []metaField, fail func(field, format string, a ...any) error) error {
	where := strings.TrimSuffix(prefix, ".")
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return fail(where, "%v", plain(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fail(where, "want a JSON object, got %v", describeToken(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(where, "%v", plain(err))
		}
		key := tok.(string) // inside an object, the decoder yields keys as strings
		name := prefix + key
		if seen[key] {
			return fail(name, "given twice")
		}
		seen[key] = true
		i := slices.IndexFunc(fields, func(f metaField) bool { return f.name == key })
		if i < 0 {
			known := make([]string, len(fields))
			for j, f := range fields {
				known[j] = f.name
			}
			return fail(name, "unknown field (known: %s)", strings.Join(known, ", "))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail(name, "%v", plain(err))
		}
		if err := json.Unmarshal(raw, fields[i].dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fail(name, "want %s, got %s", kindOf(te.Type), te.Value)
			}
			return fail(name, "%v", plain(err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail(where, "%v", plain(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(where, "trailing data after the object")
	}
	for _, f := range fields {
		if f.required && !seen[f.name] {
			return fail(prefix+f.name, "missing: %s must state it", who)
		}
	}
	return nil
}

// plain drops encoding/json's "json: " prefix.
func plain(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of JSON"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func describeToken(tok any) string {
	switch t := tok.(type) {
	case json.Delim:
		return string(t)
	case string:
		return fmt.Sprintf("string %q", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// kindOf names the JSON a Go type is read from.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a JSON object"
}

// readKVCache reads meta.json's kv_cache object, when the run recorded
// one (vLLM's KV cache as it sized it): the block count, and the block
// size and prefix caching it must agree on with engine_kwargs. vLLM's
// resolved_config, when recorded, is kept for the record and not read,
// except that its cache_config.num_gpu_blocks must be the same count.
func (m *runMeta) readKVCache(raw, resolved json.RawMessage, fail func(field, format string, a ...any) error) error {
	var (
		blocks, cpuBlocks, block, tokens *int
		memBytes                         *int64
		util                             float64
		prefix                           *bool
	)
	if len(raw) > 0 && string(raw) != "null" {
		fields := []metaField{
			{"num_gpu_blocks", &blocks, false},
			{"num_cpu_blocks", &cpuBlocks, false},
			{"block_size", &block, false},
			{"gpu_memory_utilization", &util, false},
			{"enable_prefix_caching", &prefix, false},
			{"kv_cache_memory_bytes", &memBytes, false},
			{"num_kv_tokens", &tokens, false},
		}
		if err := decodeObject(raw, "kv_cache.", fields, fail); err != nil {
			return err
		}
	}
	e := &m.Engine
	if block != nil {
		switch {
		case *block < 1:
			return fail("kv_cache.block_size", "must be >= 1, got %d", *block)
		case e.BlockSize != nil && *e.BlockSize != *block:
			return fail("kv_cache.block_size", "is %d, but engine_kwargs.block_size is %d", *block, *e.BlockSize)
		}
		e.BlockSize = block
	}
	if prefix != nil {
		if e.PrefixCaching != nil && *e.PrefixCaching != *prefix {
			return fail("kv_cache.enable_prefix_caching", "is %v, but engine_kwargs.enable_prefix_caching is %v", *prefix, *e.PrefixCaching)
		}
		e.PrefixCaching = prefix
	}
	if blocks != nil {
		if *blocks < 1 {
			return fail("kv_cache.num_gpu_blocks", "must be >= 1, got %d", *blocks)
		}
		if tokens != nil && *tokens != *blocks*e.blockSize() {
			return fail("kv_cache.num_kv_tokens", "is %d, but num_gpu_blocks %d × block size %d is %d", *tokens, *blocks, e.blockSize(), *blocks*e.blockSize())
		}
		m.KVBlocks, m.KVBlocksField = *blocks, "kv_cache.num_gpu_blocks"
	}
	if len(resolved) == 0 || string(resolved) == "null" {
		return nil
	}
	var rc struct {
		Cache struct {
			Blocks *int `json:"num_gpu_blocks"`
		} `json:"cache_config"`
	}
	if err := json.Unmarshal(resolved, &rc); err != nil {
		return fail("resolved_config", "want vLLM's resolved configuration (a JSON object with cache_config.num_gpu_blocks an integer or null): %v", plain(err))
	}
	if b := rc.Cache.Blocks; b != nil {
		switch {
		case *b < 1:
			return fail("resolved_config.cache_config.num_gpu_blocks", "must be >= 1, got %d", *b)
		case m.KVBlocks > 0 && m.KVBlocks != *b:
			return fail("resolved_config.cache_config.num_gpu_blocks", "is %d, but kv_cache.num_gpu_blocks is %d", *b, m.KVBlocks)
		case m.KVBlocks == 0:
			m.KVBlocks, m.KVBlocksField = *b, "resolved_config.cache_config.num_gpu_blocks"
		}
	}
	return nil
}

// readHardware reads meta.json's hardware object, when the run recorded
// one: the GPU's name is printed beside the profile's.
func (m *runMeta) readHardware(raw json.RawMessage, fail func(field, format string, a ...any) error) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var (
		torch, cuda, capability string
		count                   *int
		memory                  *int64
	)
	return decodeObject(raw, "hardware.", []metaField{
		{"torch_version", &torch, false},
		{"cuda_version", &cuda, false},
		{"device_count", &count, false},
		{"device_name", &m.Device, false},
		{"device_total_memory_bytes", &memory, false},
		{"device_capability", &capability, false},
	}, fail)
}
