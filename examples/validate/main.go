// Command validate checks servesim at the service boundary against a real
// vLLM run, from kernel profiles alone: it builds the replica the run's
// meta.json describes, prices every step with the kernel profile of the
// same GPU (costmodel.ProfileModel), replays the run's arrivals with
// their lengths (and prompt block hashes, when the bundle has them), and
// prints the simulated TTFT, TPOT and E2E beside the measured ones, with
// the mean absolute percentage error per request. Nothing is fitted to
// the run's latencies: they are only compared against, and every number
// printed comes from the bundle read.
//
//	go run ./examples/validate
//	go run ./examples/validate -data examples/validate/testdata/rtxpro6000-qwen3-32b-tp2
//	go run ./examples/validate -kvblocks 20000 -card card.json
//
// # The bundle
//
// A directory (-data; by default the copy shipped in
// examples/validate/testdata/rtxpro6000-llama-3.1-8b, see its NOTICE.md:
// MIT, CASYS Lab at KAIST) holding:
//
//   - vllm/meta.json, vllm/requests.jsonl: the run, as LLMServingSim's
//     bench writes it. meta.json is read as strictly as a scenario file
//     (meta.go): a wrong type, an unknown field or engine argument, a
//     field given twice, or a missing max_num_seqs or
//     max_num_batched_tokens is an error naming the file and the field.
//     Its kv_cache.num_gpu_blocks, when the run records it, is the KV pool.
//   - profile/: the kernel profile (costmodel.ReadProfile), its CSVs in
//     profile/tp<N>/ for the run's tensor-parallel degree N, or in
//     profile/ itself.
//   - model.json (optional for Llama): the model's layout, read by
//     costmodel.ReadDecoderLayout: layers, hidden_size, dtype_bytes, and
//     the profiled kernels of one layer (a name once per call), once per
//     step and per sequence. A kernel the profile lacks, or a profiled
//     kernel no list names, is an error. Without it, a profile whose
//     meta.yaml says architecture llama takes Llama's list and needs
//     -layers.
//   - bundle.json (optional): what the run does not record, each with where
//     it comes from: {"kv_blocks": {"blocks", "derivation"}, "collective":
//     {"all_reduce_perf" (nccl-tests' output, a file in the bundle) or
//     "bandwidth_gbps" (GB/s, 10⁹ bytes/s) and "latency_us", and
//     "source"}, "predictions": {"file", "simulator", "source"}}, read as
//     strictly.
//   - trace-hash-ids.jsonl (optional): arrival, input, output and one hash
//     id per full block of each prompt, so that the prefix cache sees the
//     run's reuse; without it the trace is requests.jsonl, and the replay
//     runs without prefix reuse and says so.
//
// The KV block count is -kvblocks when given, else the one the run
// records, else the one bundle.json declares; the output says which
// ("given by -kvblocks", "recorded by the run", "declared by the bundle,
// not recorded by the run"), and a bundle with none is refused. A run at
// TP > 1 needs a collective (collective() in bundle.go builds it): each
// layer's two all-reduces are priced from the nccl-tests all_reduce_perf
// curve the bundle carries (costmodel.ReadAllReduce), else from its
// declared bandwidth and latency, which the output and card call
// declared, not measured, and under whose band
// (costmodel.ProfileModel.CollectiveBand: 1/4 the bandwidth, twice the
// latency) the run is replayed again and compared too. The published
// simulator's line is
// computed from bundle.json's predictions file (LLMServingSim's
// outputs/sim.csv layout, request id N being the run's N-th request), and
// is absent when the bundle has none.
//
// A request the replica refuses (one that can never fit in the KV pool)
// is left out of the comparison with the reason and the bound; when every
// request is refused there is nothing to compare, and the command says
// why and fails.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/engine"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "validate:", err)
		os.Exit(1)
	}
}

// options are the command's flags, and the KV pool they resolve to.
type options struct {
	data     string
	kvBlocks int // -kvblocks, 0 when not given; after resolve, the replay's pool
	layers   int // -layers, 0 when not given (model.json's count)
	card     string

	kvFrom string // kvGiven, kvRecorded or kvDeclared
	kvNote string // the field that records it, or the bundle's derivation
}

func parse(w io.Writer, args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.StringVar(&o.data, "data", defaultData(), "the bundle: vllm/meta.json, vllm/requests.jsonl, profile/, and optionally model.json, bundle.json, trace-hash-ids.jsonl")
	fs.IntVar(&o.kvBlocks, "kvblocks", 0, "KV blocks (default: the count the run recorded in vllm/meta.json, else the one bundle.json declares)")
	fs.IntVar(&o.layers, "layers", 0, "decoder layers of the served model (default: model.json's; the profile times one)")
	fs.StringVar(&o.card, "card", "", "write a benchmark card (JSON) to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.data == "" {
		return o, fmt.Errorf("-data: no default outside the servesim module (the shipped run is examples/validate/testdata/%s there); name the directory", bundle)
	}
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if (f.Name == "kvblocks" && o.kvBlocks <= 0) || (f.Name == "layers" && o.layers <= 0) {
			bad = append(bad, fmt.Sprintf("-%s %s", f.Name, f.Value))
		}
	})
	if len(bad) > 0 {
		return o, fmt.Errorf("-kvblocks and -layers must be > 0 when given, got %s", strings.Join(bad, " and "))
	}
	if o.kvBlocks > engine.MaxKVBlocks {
		return o, fmt.Errorf("-kvblocks must be at most %d (engine.MaxKVBlocks), got %d", engine.MaxKVBlocks, o.kvBlocks)
	}
	if o.card != "" && !strings.HasSuffix(o.card, ".json") {
		return o, fmt.Errorf("-card %q: the card is written as JSON (name it *.json)", o.card)
	}
	if o.card != "" {
		// Checked before the replay, not after it.
		if st, err := os.Stat(filepath.Dir(o.card)); err != nil || !st.IsDir() {
			return o, fmt.Errorf("-card %q: its directory %s does not exist", o.card, filepath.Dir(o.card))
		}
	}
	return o, nil
}

// bundle is the measured data's directory name.
const bundle = "rtxpro6000-llama-3.1-8b"

// defaultData is the shipped copy, examples/validate/testdata/<bundle>
// under the root of the module containing the working directory.
func defaultData() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return filepath.Join(dir, "examples", "validate", "testdata", bundle)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "" // outside any module: run refuses it, asking for -data
}

// run reads the run and the profile, replays the run and writes the
// comparison to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := readMeasured(o.data)
	if err != nil {
		return err
	}
	if o.kvBlocks, o.kvFrom, o.kvNote, err = kvBlocks(o, m); err != nil {
		return err
	}
	r, err := replay(o, m)
	if err != nil {
		return err
	}
	c := compare(m.requests, r.records)
	printComparison(w, o, m, r, c)
	if c.compared(len(m.requests)) == 0 {
		return fmt.Errorf("none of the %d simulated requests ended ok and whole: nothing to compare, and no card is written", len(m.requests))
	}
	if o.card != "" {
		return writeCard(o, m, r, c)
	}
	return nil
}
