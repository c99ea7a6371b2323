// Command validate checks servesim at the service boundary against a real
// vLLM run, from kernel profiles alone: it builds the replica the run's
// meta.json describes (vLLM 0.19.0 serving Llama-3.1-8B on one RTX PRO
// 6000: max_num_seqs 128, max_num_batched_tokens 2048, chunked prefill,
// block size 16, prefix caching on), prices every step with the kernel
// profile of the same GPU (costmodel.ProfileModel), replays the run's 300
// arrivals with their lengths and prompt block hashes, and prints the
// simulated TTFT, TPOT and E2E beside the measured ones, with the mean
// absolute percentage error per request. Nothing is fitted to the run's
// latencies: they are only compared against.
//
//	go run ./examples/validate
//	go run ./examples/validate -kvblocks 20000 -card card.json
//
// meta.json is read as strictly as a scenario file (meta.go): a wrong
// type, an unknown field or engine argument, a field given twice, or a
// missing max_num_seqs or max_num_batched_tokens is an error naming the
// file and the field. A request the replica refuses (one that can never
// fit in -kvblocks) is left out of the comparison with the reason and the
// bound; when every request is refused there is nothing to compare, and
// the command says why and fails.
//
// By default the data are read from the copy shipped in
// examples/validate/testdata (see its NOTICE.md: MIT, CASYS Lab at
// KAIST), so that a fresh clone runs the same comparison; -data reads
// another run of the same layout.
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
