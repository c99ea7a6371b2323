package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The bundle's own files, beside vllm/ and profile/, all optional.
const (
	// bundleFile declares what the run did not record: the KV block
	// count, the collective of a TP > 1 replica, and where another
	// simulator's predictions of the run are (readBundle).
	bundleFile = "bundle.json"
	// hashFile is the replayable trace with the prompt block hashes.
	hashFile = "trace-hash-ids.jsonl"
)

// bundleDecl is what bundle.json declares; a section it leaves out is
// nil.
type bundleDecl struct {
	path        string // "" when the bundle has no bundle.json
	kv          *kvDecl
	collective  *collectiveDecl
	predictions *predictionsDecl
}

// kvDecl is a block count the run does not record, with how it was
// derived.
type kvDecl struct {
	blocks     int
	derivation string
}

// collectiveDecl is the all-reduce of a TP > 1 run: measured, an
// nccl-tests all_reduce_perf output in the bundle; else a declared figure
// (a spec sheet's, or another simulator's configuration's).
type collectiveDecl struct {
	allReducePerf string  // the all_reduce_perf output, relative to the bundle's root; "" when declared
	bandwidthGBps float64 // GB/s, 10⁹ bytes per second each GPU sends and receives
	latencyUs     float64
	source        string
}

// predictionsDecl names another simulator's per-request predictions of
// the run.
type predictionsDecl struct {
	file      string // relative to the bundle's root
	simulator string
	source    string
}

// readBundle reads dir/bundle.json, if there, as strictly as meta.json:
// an unknown field, a field given twice, a wrong type, a missing or
// meaningless required value is an error naming the file and the field.
//
//	{
//	  "kv_blocks": {"blocks": 35000, "derivation": "how the count was derived"},
//	  "collective": {"bandwidth_gbps": 16, "latency_us": 20, "source": "where the figure comes from"},
//	  "predictions": {"file": "predictions.csv", "simulator": "LLMServingSim", "source": "how the file was made"}
//	}
func readBundle(dir string) (bundleDecl, error) {
	path := filepath.Join(dir, bundleFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return bundleDecl{}, nil
	}
	if err != nil {
		return bundleDecl{}, err
	}
	d := bundleDecl{path: path}
	fail := func(field, format string, a ...any) error {
		if field == "" {
			return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
		}
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(format, a...))
	}
	var kvRaw, collRaw, predRaw json.RawMessage
	if err := decodeFields(b, "", "the bundle", []metaField{
		{"kv_blocks", &kvRaw, false},
		{"collective", &collRaw, false},
		{"predictions", &predRaw, false},
	}, fail); err != nil {
		return d, err
	}
	needText := func(field, v string) error {
		if v == "" {
			return fail(field, "is empty: say where the figure comes from")
		}
		return nil
	}
	if kvRaw != nil {
		var blocks *int
		kv := &kvDecl{}
		if err := decodeFields(kvRaw, "kv_blocks.", "the bundle", []metaField{
			{"blocks", &blocks, true},
			{"derivation", &kv.derivation, true},
		}, fail); err != nil {
			return d, err
		}
		if blocks == nil || *blocks < 1 {
			return d, fail("kv_blocks.blocks", "must be an integer >= 1")
		}
		kv.blocks = *blocks
		if err := needText("kv_blocks.derivation", kv.derivation); err != nil {
			return d, err
		}
		d.kv = kv
	}
	if collRaw != nil {
		c := &collectiveDecl{}
		var bw, lat *float64
		if err := decodeFields(collRaw, "collective.", "the bundle", []metaField{
			{"all_reduce_perf", &c.allReducePerf, false},
			{"bandwidth_gbps", &bw, false},
			{"latency_us", &lat, false},
			{"source", &c.source, true},
		}, fail); err != nil {
			return d, err
		}
		switch {
		case c.allReducePerf != "" && (bw != nil || lat != nil):
			return d, fail("collective", "gives both all_reduce_perf (measured) and bandwidth_gbps or latency_us (declared): keep one")
		case c.allReducePerf != "":
			if filepath.IsAbs(c.allReducePerf) || !filepath.IsLocal(c.allReducePerf) {
				return d, fail("collective.all_reduce_perf", "want a file inside the bundle, relative to its root, got %q", c.allReducePerf)
			}
		case bw == nil || lat == nil:
			return d, fail("collective", "want all_reduce_perf (nccl-tests' output, measured) or both bandwidth_gbps and latency_us (declared)")
		case !(*bw > 0) || math.IsInf(*bw, 0):
			return d, fail("collective.bandwidth_gbps", "must be a finite number of GB/s > 0, got %v", *bw)
		case !(*lat >= 0) || math.IsInf(*lat, 0):
			return d, fail("collective.latency_us", "must be a finite number of µs >= 0, got %v", *lat)
		default:
			c.bandwidthGBps, c.latencyUs = *bw, *lat
		}
		if err := needText("collective.source", c.source); err != nil {
			return d, err
		}
		d.collective = c
	}
	if predRaw != nil {
		p := &predictionsDecl{}
		if err := decodeFields(predRaw, "predictions.", "the bundle", []metaField{
			{"file", &p.file, true},
			{"simulator", &p.simulator, true},
			{"source", &p.source, false},
		}, fail); err != nil {
			return d, err
		}
		switch {
		case p.file == "" || filepath.IsAbs(p.file) || !filepath.IsLocal(p.file):
			return d, fail("predictions.file", "want a file inside the bundle, relative to its root, got %q", p.file)
		case p.simulator == "":
			return d, fail("predictions.simulator", "is empty: name the simulator whose predictions these are")
		}
		d.predictions = p
	}
	return d, nil
}

// The sources of the KV block count, in the order they are taken.
const (
	kvGiven    = "given by -kvblocks"
	kvRecorded = "recorded by the run"
	kvDeclared = "declared by the bundle, not recorded by the run"
)

// kvBlocks is the replay's KV pool and where it comes from: -kvblocks
// when given, else the count the run recorded (meta.json), else the one
// bundle.json declares; a bundle with none of them is refused, naming
// the files and the flag. A bundle that declares a count the run also
// records is refused as contradicting itself when the two differ.
func kvBlocks(o options, m measured) (blocks int, source, note string, err error) {
	meta := filepath.Join(m.dir, "vllm", "meta.json")
	if m.bundle.kv != nil && m.meta.KVBlocks > 0 && m.bundle.kv.blocks != m.meta.KVBlocks {
		return 0, "", "", fmt.Errorf("%s: kv_blocks.blocks declares %d, but %s records %s %d: drop the declaration", m.bundle.path, m.bundle.kv.blocks, meta, m.meta.KVBlocksField, m.meta.KVBlocks)
	}
	switch {
	case o.kvBlocks > 0:
		if m.meta.KVBlocks > 0 {
			note = fmt.Sprintf("the run recorded %d (%s)", m.meta.KVBlocks, m.meta.KVBlocksField)
		}
		return o.kvBlocks, kvGiven, note, nil
	case m.meta.KVBlocks > 0:
		return m.meta.KVBlocks, kvRecorded, "vllm/meta.json " + m.meta.KVBlocksField, nil
	case m.bundle.kv != nil:
		return m.bundle.kv.blocks, kvDeclared, bundleFile + " kv_blocks: " + m.bundle.kv.derivation, nil
	}
	return 0, "", "", fmt.Errorf("the KV block count is neither recorded by the run (%s has no kv_cache.num_gpu_blocks) nor declared by the bundle (%s has no kv_blocks) nor given (-kvblocks): the replay needs the size of vLLM's KV pool, which can change every latency",
		meta, filepath.Join(m.dir, bundleFile))
}

// collective prices the all-reduces of a TP > 1 replay: the one place the
// bundle's collective becomes a costmodel.Collective, on the hidden size
// and activation bytes model.json gives (c's Hidden and DTypeBytes, set
// by DecoderLayout.Apply). Measured: the curve of bundle.json's
// all_reduce_perf file (costmodel.ReadAllReduce) prices each all-reduce
// at its message's bytes. Declared: bundle.json's bandwidth and latency
// price a ring all-reduce, and the replay is run again under the
// declared figure's band (ProfileModel.CollectiveBand). The description
// says which it is.
func collective(m measured, tp int, c costmodel.Collective) (costmodel.Collective, string, error) {
	d := m.bundle.collective
	if d == nil {
		return c, "", fmt.Errorf("the run used tensor parallelism %d, and %s declares no collective: give collective.all_reduce_perf (nccl-tests' output) or bandwidth_gbps and latency_us, and source (each layer's two all-reduces are priced from them)",
			tp, filepath.Join(m.dir, bundleFile))
	}
	if c.Hidden < 1 {
		return c, "", fmt.Errorf("the run used tensor parallelism %d, and the bundle has no %s to give the hidden size the all-reduces carry", tp, filepath.Join(m.dir, costmodel.ModelFile))
	}
	bytes := fmt.Sprintf("tokens × %d × %d B", c.Hidden, max(c.DTypeBytes, 2))
	if d.allReducePerf != "" {
		curve, err := costmodel.ReadAllReduce(os.DirFS(m.dir), filepath.ToSlash(d.allReducePerf))
		if err != nil {
			return c, "", fmt.Errorf("%s: collective.all_reduce_perf: %w", filepath.Join(m.dir, bundleFile), err)
		}
		if curve.Ranks != tp {
			return c, "", fmt.Errorf("%s: collective.all_reduce_perf: %s measured %d GPUs, but the run used tensor parallelism %d", filepath.Join(m.dir, bundleFile), d.allReducePerf, curve.Ranks, tp)
		}
		c.Measured = curve
		p := curve.Points
		return c, fmt.Sprintf("TP %d: two all-reduces per layer of %s each, measured by nccl-tests all_reduce_perf (%s: %d GPUs, %d to %d B; %s)",
			tp, bytes, d.allReducePerf, curve.Ranks, p[0].Bytes, p[len(p)-1].Bytes, d.source), nil
	}
	c.Bandwidth = d.bandwidthGBps * 1e9
	c.Latency = time.Duration(math.Round(d.latencyUs * 1e3))
	desc := fmt.Sprintf("TP %d: two all-reduces per layer of %s at %.4g GB/s and %.4g µs each, declared by the bundle, not measured (%s)",
		tp, bytes, d.bandwidthGBps, d.latencyUs, d.source)
	return c, desc, nil
}
