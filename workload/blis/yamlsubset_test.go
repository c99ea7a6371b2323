package blis

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// render prints a parsed tree compactly: {k: v, …}, [a, …], "quoted",
// plain, and ∅ for null.
func render(n *yamlNode) string {
	switch n.kind {
	case yamlMap:
		parts := make([]string, len(n.keys))
		for i, k := range n.keys {
			parts[i] = k + ": " + render(n.vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yamlSeq:
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = render(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	switch {
	case n.isNull():
		return "∅"
	case n.quoted:
		return fmt.Sprintf("%q", n.text)
	}
	return n.text
}

func TestYAMLSubsetParses(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"", "{}"},
		{"---\na: 1\n", "{a: 1}"},
		{"a: 1 # one\n# whole line\n\nb: x#y\n", "{a: 1, b: x#y}"},
		{"a:\n    b:\n        c: 3\n    d: 4\ne: 5\n", "{a: {b: {c: 3}, d: 4}, e: 5}"},
		{"s: 'it''s # not a comment'\nd: \"tab\\tq\\\"\\u00e9\\x41\" # c\n", `{s: "it's # not a comment", d: "tab\tq\"éA"}`},
		{"t:\n    - type: fs\n      root: /x\n    - type: mem\nu: 1\n", "{t: [{type: fs, root: /x}, {type: mem}], u: 1}"},
		{"t:\n- a\n- 'b'\n-\n- - c\n  - d\n", `{t: [a, "b", ∅, [c, d]]}`},
		{"m: {}\nl: []\nn:\nz: ~\nq: \"\"\n", `{m: {}, l: [], n: ∅, z: ∅, q: ""}`},
		{"url: http://x/y?z=1\ntime: 12:30:00\n\"quoted key\": v\n", "{url: http://x/y?z=1, time: 12:30:00, quoted key: v}"},
		{"a: 1\r\nb: 2\r\n", "{a: 1, b: 2}"},
	} {
		n, err := parseYAML(tc.src)
		require.NoError(t, err, "%q", tc.src)
		assert.Equal(t, tc.want, render(n), "%q", tc.src)
	}
}

func TestYAMLSubsetRefusesWithTheLine(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"a: 1\n\tb: 2\n", "line 2: a tab in indentation"},
		{"a: 1\na: 2\n", `line 2: key "a" repeats an earlier key`},
		{"a: [1, 2]\n", "line 1: flow collections"},
		{"a: |\n  text\n", "line 1: block scalars"},
		{"a: &x 1\nb: *x\n", "line 1: anchors, aliases and tags"},
		{"a: !!str 1\n", "line 1: anchors, aliases and tags"},
		{"a: b: c\n", `line 1: "b: c" holds ": " or ends in ":": quote it`},
		{"a: 'open\n", "line 1: a quoted value without its closing '"},
		{"a: \"\\q\"\n", `line 1: unknown escape \q`},
		{"a: x\n  continued\n", `line 2: "continued" belongs to no block above it`},
		{"a: 1\n---\nb: 2\n", "line 2: a document marker after the first line"},
		{"a: 1\n\x01b: 2\n", "line 2: a control character or line separator (U+0001)"},
		{"<<: {}\n", `line 1: key "<<" is not a plain key this reader takes`},
		{"just text\n", `line 1: "just text" is not a "key: value" line`},
		{"  a: 1\n", "line 1: the document must start at column 1"},
		{"%YAML 1.2\n---\na: 1\n", "line 1: YAML directives"},
		{strings.Repeat("- ", 40) + "x\n", "nested more than 32 deep"},
	} {
		_, err := parseYAML(tc.src)
		require.Error(t, err, "%q", tc.src)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.src)
	}
}

// BLIS's TraceHeader and its sections, their yaml tags copied from
// inference-sim's sim/workload/tracev2.go (and slo.go): what BLIS
// marshals with yaml.v3 and decodes with KnownFields(true).
type blisTraceHeader struct {
	Version              int                      `yaml:"trace_version"`
	TimeUnit             string                   `yaml:"time_unit"`
	CreatedAt            string                   `yaml:"created_at,omitempty"`
	Mode                 string                   `yaml:"mode"`
	WarmUpRequests       int                      `yaml:"warm_up_requests"`
	WorkloadSeed         *int64                   `yaml:"workload_seed,omitempty"`
	WorkloadSpec         string                   `yaml:"workload_spec,omitempty"`
	SessionContextGrowth string                   `yaml:"session_context_growth,omitempty"`
	Server               *blisServerConfig        `yaml:"server,omitempty"`
	Network              *blisNetworkConfig       `yaml:"network,omitempty"`
	GoodputSLOTargets    map[string]blisSLOTarget `yaml:"goodput_slo_targets,omitempty"`
	KVOffload            *blisKVOffload           `yaml:"kv_offload,omitempty"`
	ObservedKVMetrics    *blisObservedKV          `yaml:"observed_kv_metrics,omitempty"`
}

type blisServerConfig struct {
	Type                 string  `yaml:"type,omitempty"`
	Model                string  `yaml:"model,omitempty"`
	TensorParallel       int     `yaml:"tensor_parallel,omitempty"`
	MaxNumSeqs           int     `yaml:"max_num_seqs,omitempty"`
	BlockSize            int     `yaml:"block_size,omitempty"`
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization,omitempty"`
	MaxModelLen          int64   `yaml:"max_model_len,omitempty"`
}

type blisNetworkConfig struct {
	MeasuredRTTMs float64 `yaml:"measured_rtt_ms,omitempty"`
}

type blisSLOTarget struct {
	TTFTMs float64 `yaml:"ttft_ms,omitempty"`
	ITLMs  float64 `yaml:"itl_ms,omitempty"`
	E2EMs  float64 `yaml:"e2e_ms,omitempty"`
}

type blisKVOffload struct {
	CPUBytesToUse  int64           `yaml:"cpu_bytes_to_use"`
	EvictionPolicy string          `yaml:"eviction_policy"`
	Tiers          []blisKVOffTier `yaml:"secondary_tiers,omitempty"`
}

type blisKVOffTier struct {
	Type          string  `yaml:"type"`
	RootDir       string  `yaml:"root_dir"`
	ReadBandwidth float64 `yaml:"read_bandwidth"`
	DirectIO      bool    `yaml:"direct_io"`
}

type blisObservedKV struct {
	Source  string  `yaml:"source"`
	HitRate float64 `yaml:"hit_rate"`
}

// A header BLIS marshals with yaml.v3, every section present, awkward
// strings included, reads into the same values.
func TestBLISHeaderReadsWhatBLISMarshals(t *testing.T) {
	seed := int64(-7)
	in := blisTraceHeader{
		Version: 3, TimeUnit: "us", CreatedAt: "2026-05-01T12:00:00Z", Mode: "real", WarmUpRequests: 5,
		WorkloadSeed: &seed, WorkloadSpec: "specs/a: b #1.yaml", SessionContextGrowth: "accumulate",
		Server:            &blisServerConfig{Type: "vllm", Model: "true", TensorParallel: 4, MaxNumSeqs: 256, BlockSize: 16, GPUMemoryUtilization: 0.9, MaxModelLen: 131072},
		Network:           &blisNetworkConfig{MeasuredRTTMs: 0.42},
		GoodputSLOTargets: map[string]blisSLOTarget{"critical": {TTFTMs: 600, ITLMs: 150}, "batch tier": {E2EMs: 1.2e5}, "007": {TTFTMs: 1e-3}},
		KVOffload:         &blisKVOffload{CPUBytesToUse: 8 << 30, EvictionPolicy: "lru", Tiers: []blisKVOffTier{{"fs", "/mnt/kv", 2500.5, true}, {"fs", "'quoted'", 1, false}}},
		ObservedKVMetrics: &blisObservedKV{Source: "tiered", HitRate: 0.25},
	}
	b, err := yaml.Marshal(in)
	require.NoError(t, err)
	h, err := ReadHeader(bytes.NewReader(b), "blis.yaml")
	require.NoError(t, err, "%s", b)
	assert.Equal(t, Header{
		Version: 3, TimeUnit: "us", CreatedAt: "2026-05-01T12:00:00Z", Mode: "real", WarmUpRequests: 5,
		WorkloadSeed: &seed, WorkloadSpec: "specs/a: b #1.yaml", SessionContextGrowth: "accumulate",
		Server:        &Server{Type: "vllm", Model: "true", TensorParallel: 4, MaxNumSeqs: 256, BlockSize: 16, GPUMemoryUtilization: 0.9, MaxModelLen: 131072},
		MeasuredRTTMs: 0.42,
		SLOTargets:    map[string]SLOTarget{"critical": {TTFTMs: 600, ITLMs: 150}, "batch tier": {E2EMs: 1.2e5}, "007": {TTFTMs: 1e-3}},
		Other:         []string{"kv_offload", "observed_kv_metrics"},
	}, h, "%s", b)
}

// What servesim writes, BLIS's own decoder (yaml.v3, KnownFields) reads
// back into the same values.
func TestBLISDecodesTheHeaderServesimWrites(t *testing.T) {
	seed := int64(42)
	h := Header{Version: 3, TimeUnit: "microseconds", CreatedAt: "2026-05-01T12:00:00Z", Mode: "generated",
		WarmUpRequests: 2, WorkloadSeed: &seed, WorkloadSpec: "preset:chatbot", SessionContextGrowth: "on",
		Server:        &Server{Type: "servesim", Model: "70B dense, TP4", TensorParallel: 4, MaxNumSeqs: 32, BlockSize: 16, GPUMemoryUtilization: 0.9, MaxModelLen: 8192},
		MeasuredRTTMs: 1.5,
		SLOTargets:    map[string]SLOTarget{"": {TTFTMs: 600, ITLMs: 150}, "chat, \"quoted\"": {E2EMs: 3e4}, "null": {ITLMs: 0.5}},
	}
	var b bytes.Buffer
	require.NoError(t, h.writeYAML(&b))
	var out blisTraceHeader
	dec := yaml.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&out), "%s", b.String())
	assert.Equal(t, blisTraceHeader{Version: 3, TimeUnit: "microseconds", CreatedAt: "2026-05-01T12:00:00Z", Mode: "generated",
		WarmUpRequests: 2, WorkloadSeed: &seed, WorkloadSpec: "preset:chatbot", SessionContextGrowth: "on",
		Server:            &blisServerConfig{"servesim", "70B dense, TP4", 4, 32, 16, 0.9, 8192},
		Network:           &blisNetworkConfig{1.5},
		GoodputSLOTargets: map[string]blisSLOTarget{"": {600, 150, 0}, "chat, \"quoted\"": {0, 0, 3e4}, "null": {0, 0.5, 0}},
	}, out)
	back, err := ReadHeader(&b, "h")
	require.NoError(t, err)
	assert.Equal(t, h, back)
}

// sameTree compares a tree this parser accepted with yaml.v3's decoding of
// the same text into any: the same mappings, sequences and strings
// (scalars yaml.v3 resolves to other types are not compared).
func sameTree(n *yamlNode, v any) error {
	switch x := v.(type) {
	case map[string]any:
		if n.kind != yamlMap || len(n.keys) != len(x) {
			return fmt.Errorf("line %d: %s, yaml.v3 a mapping of %d keys", n.line, render(n), len(x))
		}
		for i, k := range n.keys {
			if err := sameTree(n.vals[i], x[k]); err != nil {
				return err
			}
		}
	case []any:
		if n.kind != yamlSeq || len(n.items) != len(x) {
			return fmt.Errorf("line %d: %s, yaml.v3 a sequence of %d", n.line, render(n), len(x))
		}
		for i := range x {
			if err := sameTree(n.items[i], x[i]); err != nil {
				return err
			}
		}
	case string:
		if n.kind != yamlScalar || n.text != x {
			return fmt.Errorf("line %d: %s, yaml.v3 the string %q", n.line, render(n), x)
		}
	case nil:
		if !n.isNull() && !(n.kind == yamlScalar && n.text == "" && !n.quoted) {
			return fmt.Errorf("line %d: %s, yaml.v3 null", n.line, render(n))
		}
	}
	return nil
}

// FuzzYAMLSubset: no input panics the parser or takes it deeper than its
// bound; an error names a line of the input; what it accepts, yaml.v3
// accepts too, with the same structure and strings.
func FuzzYAMLSubset(f *testing.F) {
	for _, s := range []string{
		"trace_version: 3\ntime_unit: microseconds\nmode: generated\nwarm_up_requests: 0\n",
		"a:\n    - type: fs\n      root_dir: '/x y'\n    - b\nc: \"\\u00e9\\n\"\n",
		"t:\n- - c\n  - d\n-\nm: {}\n",
		"k: v # c\n'q k': ~\n",
		// inputs the fuzzer once found this reader to accept where yaml.v3
		// did not, or to read otherwise
		"\x01:", "A:\n    - 0A ", " \u2004", "- \t", "- A\t#", "... :", "---\n---\n-", "<<:", "#\u2029⩩",
		strings.Repeat("k", 1030) + ": v",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := parseYAML(src)
		if err != nil {
			ye, ok := err.(*yamlError)
			if !ok || ye.line < 1 || ye.line > strings.Count(src, "\n")+1 {
				t.Fatalf("error without a line of the input: %v", err)
			}
			return
		}
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			if strings.Contains(err.Error(), "unmarshal errors") || slices.ContainsFunc([]string{"\t", "\\"}, func(s string) bool { return strings.Contains(src, s) }) {
				return // a value yaml.v3 cannot type, or a tab or escape it reads otherwise
			}
			t.Fatalf("accepted what yaml.v3 refuses (%v):\n%s\n→ %s", err, src, render(n))
		}
		if v == nil {
			v = map[string]any{}
		}
		if err := sameTree(n, v); err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
	})
}
