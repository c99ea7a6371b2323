package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/workload"
)

// measured is the real run: vLLM's arguments and identity (meta.json),
// each request's timestamps (requests.jsonl) and the replayable trace of
// its arrivals, lengths and prompt block hashes (trace-hash-ids.jsonl).
type measured struct {
	dir      string
	meta     runMeta
	requests []request
	trace    string // path of trace-hash-ids.jsonl, or of requests.jsonl when the bundle has no hashes
	hashes   bool   // the trace carries the prompts' block hashes (trace-hash-ids.jsonl)

	bundle      bundleDecl               // bundle.json's declarations
	layout      *costmodel.DecoderLayout // model.json, when the bundle has one
	predictions *predicted               // another simulator's predictions, when bundle.json names them
}

// runMeta is what meta.json says of the run.
type runMeta struct {
	Model       string     `json:"model"`
	VLLMVersion string     `json:"vllm_version"`
	Engine      engineArgs `json:"engine_kwargs"`
	Requests    int        `json:"num_requests"`
	StartedAt   string     `json:"started_at"`

	// KVBlocks is the KV pool vLLM sized, when the run recorded it (0
	// when not), and KVBlocksField the field that records it.
	KVBlocks      int
	KVBlocksField string
	// Device is the GPU the run served on, when recorded.
	Device string
}

// engineArgs are the engine arguments of the run; an argument the run did
// not pass has vLLM's default (nil here). max_num_seqs and
// max_num_batched_tokens have no default to fall back on (vLLM picks them
// by hardware and usage context), so meta.json must state them.
type engineArgs struct {
	TP               int   `json:"tensor_parallel_size"`
	DP               int   `json:"data_parallel_size"`
	MaxNumSeqs       int   `json:"max_num_seqs"`
	MaxBatchedTokens int   `json:"max_num_batched_tokens"`
	BlockSize        *int  `json:"block_size"`
	ChunkedPrefill   *bool `json:"enable_chunked_prefill"`
	PrefixCaching    *bool `json:"enable_prefix_caching"`
}

// vLLM V1's defaults for the arguments a run may leave out.
const (
	vllmBlockSize      = 16
	vllmChunkedPrefill = true
	vllmPrefixCaching  = true
)

func (e engineArgs) blockSize() int {
	if e.BlockSize == nil {
		return vllmBlockSize
	}
	return *e.BlockSize
}

func (e engineArgs) chunkedPrefill() bool {
	if e.ChunkedPrefill == nil {
		return vllmChunkedPrefill
	}
	return *e.ChunkedPrefill
}

func (e engineArgs) prefixCaching() bool {
	if e.PrefixCaching == nil {
		return vllmPrefixCaching
	}
	return *e.PrefixCaching
}

// request is one measured request: vLLM's timestamps, seconds on one
// monotonic clock.
type request struct {
	Input     int     `json:"input_toks"`
	Output    int     `json:"output_toks"`
	Queued    float64 `json:"queued_ts"`
	FirstTok  float64 `json:"first_token_ts"`
	LastToken float64 `json:"last_token_ts"`
}

// TTFT, E2E and TPOT as vLLM defines them, ms.
func (r request) ttft() float64 { return 1e3 * (r.FirstTok - r.Queued) }
func (r request) e2e() float64  { return 1e3 * (r.LastToken - r.Queued) }
func (r request) tpot() float64 { return (r.e2e() - r.ttft()) / float64(r.Output-1) }

// traceConfig reads trace-hash-ids.jsonl: arrival in seconds (vLLM's
// queued_ts), input and output tokens, and one hash id per full 16-token
// block of the prompt. Without it, the trace is requests.jsonl itself
// (queued_ts, input_toks, output_toks), without prompt hashes: the
// prefix cache then finds no reuse.
func (m measured) traceConfig() workload.TraceConfig {
	if !m.hashes {
		return workload.TraceConfig{Format: workload.JSONL, Columns: workload.Columns{
			Arrival: "queued_ts", ArrivalUnit: time.Second, Input: "input_toks", Output: "output_toks",
		}}
	}
	return workload.TraceConfig{Format: workload.JSONL, Columns: workload.Columns{
		Arrival: "arrival", ArrivalUnit: time.Second, Input: "input", Output: "output",
		PrefixHashes: "hash_ids", BlockTokens: m.meta.Engine.blockSize(),
	}}
}

func readMeasured(dir string) (measured, error) {
	m := measured{dir: dir}
	metaPath := filepath.Join(dir, "vllm", "meta.json")
	var err error
	if m.meta, err = readMeta(metaPath); err != nil {
		return m, err
	}
	reqPath := filepath.Join(dir, "vllm", "requests.jsonl")
	if m.requests, err = readRequests(reqPath); err != nil {
		return m, err
	}
	if m.meta.Requests > 0 && m.meta.Requests != len(m.requests) {
		return m, fmt.Errorf("%s: num_requests is %d, but %s holds %d requests", metaPath, m.meta.Requests, reqPath, len(m.requests))
	}
	m.trace, m.hashes = filepath.Join(dir, hashFile), true
	if _, err := os.Stat(m.trace); errors.Is(err, fs.ErrNotExist) {
		m.trace, m.hashes = reqPath, false
	}
	if err := m.check(); err != nil {
		return m, err
	}
	if m.bundle, err = readBundle(dir); err != nil {
		return m, err
	}
	modelPath := filepath.Join(dir, costmodel.ModelFile)
	switch b, err := os.ReadFile(modelPath); {
	case err == nil:
		layout, err := costmodel.ParseDecoderLayout(b, modelPath)
		if err != nil {
			return m, err
		}
		m.layout = &layout
	case !errors.Is(err, fs.ErrNotExist):
		return m, err
	}
	if m.bundle.predictions != nil {
		if m.predictions, err = readPredictions(dir, *m.bundle.predictions, m.requests); err != nil {
			return m, err
		}
	}
	return m, nil
}

func readRequests(path string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue // a blank line holds no request
		}
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if r.Output < 2 || !(r.FirstTok >= r.Queued && r.LastToken >= r.FirstTok) {
			return nil, fmt.Errorf("%s:%d: a request needs >= 2 output tokens and queued <= first <= last token, got %+v", path, line, r)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no requests: a run to compare against needs at least one line", path)
	}
	return rs, nil
}

// check makes sure the trace replays the measured requests, line by line:
// the same lengths, arriving at their queued_ts.
func (m measured) check() error {
	tr, err := workload.OpenTrace(m.trace, m.traceConfig())
	if err != nil {
		return err
	}
	defer tr.Close()
	first := m.requests[0].Queued
	for i := 0; ; i++ {
		r, err := tr.Next()
		if err == io.EOF {
			if i != len(m.requests) {
				return fmt.Errorf("%s has %d requests, requests.jsonl %d", m.trace, i, len(m.requests))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if i >= len(m.requests) {
			return fmt.Errorf("%s has more requests than requests.jsonl (%d)", m.trace, len(m.requests))
		}
		q := m.requests[i]
		at := time.Duration(math.Round((q.Queued - first) * 1e9))
		if r.InputTokens != q.Input || r.OutputTokens != q.Output || (r.Arrival-at).Abs() > time.Microsecond {
			return fmt.Errorf("%s line %d (%d in, %d out at %v) is not requests.jsonl line %d (%d in, %d out at %v)",
				m.trace, i+1, r.InputTokens, r.OutputTokens, r.Arrival, i+1, q.Input, q.Output, at)
		}
	}
}
