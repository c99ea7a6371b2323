package costmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// meta is a profile's meta.yaml, read as the block-style subset of YAML
// the profiler writes: nested "key: value" maps by indentation (spaces),
// "- item" list entries and flow values such as "[1, 2]" kept as text,
// '#' comments. Keys are the dotted path from the top, "skew_fit.per_tp.1.
// alpha_default". costmodel is a leaf (the standard library and gonum
// only), hence this reader rather than a YAML library.
type meta struct {
	values map[string]metaValue
}

// metaValue is a scalar and where it was written.
type metaValue struct {
	text         string
	line, column int
}

// parseMeta reads data; file names it in errors.
func parseMeta(data []byte, file string) (meta, error) {
	m := meta{values: map[string]metaValue{}}
	type level struct {
		indent int
		key    string
	}
	var stack []level
	for i, raw := range strings.Split(string(data), "\n") {
		line := i + 1
		text := strings.TrimRight(stripComment(raw), " \r")
		body := strings.TrimLeft(text, " ")
		if body == "" {
			continue
		}
		indent := len(text) - len(body)
		if strings.HasPrefix(body, "\t") {
			return m, &ProfileError{file, line, indent + 1, errors.New("a tab in the indentation (YAML indents with spaces)")}
		}
		if strings.HasPrefix(body, "- ") || body == "-" {
			if len(stack) == 0 {
				return m, &ProfileError{file, line, indent + 1, errors.New("a list item outside any key")}
			}
			continue // list items are not read
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		colon := strings.Index(body, ":")
		if colon <= 0 || colon+1 < len(body) && body[colon+1] != ' ' {
			return m, &ProfileError{file, line, indent + 1, fmt.Errorf("expected \"key: value\" or \"key:\", got %q", body)}
		}
		key := unquote(strings.TrimSpace(body[:colon]))
		if len(stack) > 0 {
			key = stack[len(stack)-1].key + "." + key
		}
		value := strings.TrimSpace(body[colon+1:])
		if value == "" {
			stack = append(stack, level{indent, key})
			continue
		}
		m.values[key] = metaValue{unquote(value), line, indent + colon + 3}
	}
	return m, nil
}

// stripComment drops a '#' comment that starts a line or follows a space,
// outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return s[:i]
		}
	}
	return s
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '"' && s[len(s)-1] == '"') {
		return s[1 : len(s)-1]
	}
	return s
}

func (m meta) text(key string) string { return m.values[key].text }

// float reads key as a number; absent is (0, false, nil).
func (m meta) float(key, file string) (float64, bool, error) {
	v, ok := m.values[key]
	if !ok {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || !finite(f) {
		return 0, false, &ProfileError{file, v.line, v.column, fmt.Errorf("%s: %q is not a number", key, v.text)}
	}
	return f, true, nil
}

// apply fills what meta.yaml says into p: the provenance, the kernels of
// its architecture, and the pooled skew correction for p's TP.
func (m meta) apply(p *Profile, file string) error {
	pv := &p.Provenance
	pv.GPU = m.text("gpu")
	if pv.GPU == "" {
		pv.GPU = m.text("hardware")
	}
	pv.Model, pv.Variant, pv.ProfiledAt = m.text("model"), m.text("variant"), m.text("profiled_at")
	if v := m.text("vllm_version"); v != "" {
		pv.Framework = "vLLM " + v
		if c := m.text("cuda_version"); c != "" {
			pv.Framework += ", CUDA " + c
		}
	}
	pv.Method = "per-kernel CUDA time"
	if it := m.text("measurement_iterations"); it != "" {
		pv.Method += ", mean of " + it + " iterations"
	}
	if m.text("engine_effective.enforce_eager") == "true" {
		pv.Method += ", eager mode"
	}
	if v := m.text("profiler_version"); v != "" {
		pv.Method += ", profiler " + v
	}
	if m.text("architecture") == "llama" {
		p.LayerKernels, p.StepKernels, p.SequenceKernels = LlamaKernels()
		if err := p.unnamedKernels(file+": architecture llama (costmodel.LlamaKernels)", " of a model.json that describes this model"); err != nil {
			return err
		}
	}
	if m.text("skew_fit.enabled") == "false" {
		return nil
	}
	alpha, ok, err := m.float(fmt.Sprintf("skew_fit.per_tp.%d.alpha_default", p.tp()), file)
	if err == nil && !ok {
		alpha, _, err = m.float("skew_fit.alpha_default", file)
	}
	p.SkewAlpha, p.DecodeSkewAlpha = alpha, alpha
	if err == nil && alpha > 0 {
		p.Provenance.Skew = fmt.Sprintf("the pooled fit of %s, α %.4g for both kernels", file, alpha)
	}
	return err
}

// ModelFile is the file that describes the served model to a profile
// reader: a JSON object, read by ReadDecoderLayout.
const ModelFile = "model.json"

// DecoderLayout is a dense decoder's layout, what a kernel profile cannot
// say of itself (its profiler times a one-layer copy of the model): the
// layer count, the width of the activations the tensor-parallel
// all-reduces carry, and which profiled kernels make one decoder layer,
// which run once per step and which once per sequence. It is what lets
// any dense decoder (Llama, Qwen, Mistral, …) be priced from its profile
// without code; ReadDecoderLayout reads it from a bundle's model.json:
//
//	{
//	  "model": "Qwen/Qwen3-32B",
//	  "layers": 64,
//	  "hidden_size": 5120,
//	  "dtype_bytes": 2,
//	  "layer_kernels": ["layernorm", "qkv_proj", "qk_norm", "rotary_emb", "o_proj",
//	                    "layernorm", "gate_up_proj", "act_fn", "down_proj"],
//	  "step_kernels": ["embedding", "final_layernorm"],
//	  "sequence_kernels": ["lm_head", "sampler"]
//	}
//
// "model" is optional; when given it must be the model meta.yaml names.
// The zero DecoderLayout is invalid: every other field is required.
type DecoderLayout struct {
	// Model is the model's name ("Qwen/Qwen3-32B"); optional, checked
	// against the profile's meta.yaml when both give one.
	Model string
	// Layers is the decoder layer count (64 for Qwen3-32B), > 0.
	Layers int
	// Hidden is the model's hidden size (5120 for Qwen3-32B), > 0: the
	// width of the activations each tensor-parallel all-reduce carries.
	Hidden int
	// DTypeBytes is the bytes per activation element (2 for bf16), > 0.
	DTypeBytes int
	// LayerKernels lists the dense.csv kernels of one decoder layer, a
	// name once per call (a norm run twice is listed twice), non-empty.
	// StepKernels lists the dense.csv kernels run once per step (the
	// embedding, the final norm); SequenceKernels the per_sequence.csv
	// kernels (the LM head, the sampler). Attention is not listed: it is
	// attention.csv, one call per layer.
	LayerKernels, StepKernels, SequenceKernels []string
	// Source is the file the spec was read from, for messages ("" for a
	// spec made in code).
	Source string
}

// decoderLayoutJSON is model.json's schema: every field a pointer so that a
// missing one is told apart from a zero.
type decoderLayoutJSON struct {
	Model           *string   `json:"model"`
	Layers          *int      `json:"layers"`
	Hidden          *int      `json:"hidden_size"`
	DTypeBytes      *int      `json:"dtype_bytes"`
	LayerKernels    *[]string `json:"layer_kernels"`
	StepKernels     *[]string `json:"step_kernels"`
	SequenceKernels *[]string `json:"sequence_kernels"`
}

// ReadDecoderLayout reads a model description (see DecoderLayout) from file in
// fsys, strictly: an unknown field, a wrong type, a missing field,
// trailing data or a value that cannot mean anything is an error naming
// the file and the field.
func ReadDecoderLayout(fsys fs.FS, file string) (DecoderLayout, error) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return DecoderLayout{}, err
	}
	return ParseDecoderLayout(data, file)
}

// ParseDecoderLayout is ReadDecoderLayout on the file's content; file names it in
// errors.
func ParseDecoderLayout(data []byte, file string) (DecoderLayout, error) {
	s := DecoderLayout{Source: file}
	var j decoderLayoutJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return s, fmt.Errorf("%s: %s: want %s, got %s", file, te.Field, jsonKind(te.Type.String()), te.Value)
		case errors.As(err, &te):
			return s, fmt.Errorf("%s: want a JSON object, got %s", file, te.Value)
		case err == io.EOF:
			return s, fmt.Errorf("%s: empty: want a JSON object", file)
		}
		return s, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return s, fmt.Errorf("%s: trailing data after the object", file)
	}
	var missing []string
	needInt := func(name string, p *int, dst *int) {
		if p == nil {
			missing = append(missing, name)
			return
		}
		*dst = *p
	}
	needList := func(name string, p *[]string, dst *[]string) {
		if p == nil {
			missing = append(missing, name)
			return
		}
		*dst = *p
	}
	if j.Model != nil {
		s.Model = *j.Model
	}
	needInt("layers", j.Layers, &s.Layers)
	needInt("hidden_size", j.Hidden, &s.Hidden)
	needInt("dtype_bytes", j.DTypeBytes, &s.DTypeBytes)
	needList("layer_kernels", j.LayerKernels, &s.LayerKernels)
	needList("step_kernels", j.StepKernels, &s.StepKernels)
	needList("sequence_kernels", j.SequenceKernels, &s.SequenceKernels)
	if len(missing) > 0 {
		return s, fmt.Errorf("%s: %s: missing (a model description states layers, hidden_size, dtype_bytes, layer_kernels, step_kernels and sequence_kernels)", file, strings.Join(missing, ", "))
	}
	return s, s.Validate()
}

// jsonKind names the JSON a Go type (as encoding/json spells it) is read
// from.
func jsonKind(goType string) string {
	switch {
	case goType == "int":
		return "an integer"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list of strings"
	}
	return "a JSON object"
}

// Validate names every field that cannot mean anything: a count below 1,
// an empty layer, an empty or repeated kernel name across lists (a name
// may repeat within layer_kernels, once per call).
func (s DecoderLayout) Validate() error {
	where := "costmodel: DecoderLayout"
	field := func(json, gofield string) string { return where + "." + gofield }
	if s.Source != "" {
		where = s.Source
		field = func(json, gofield string) string { return where + ": " + json }
	}
	var errs []error
	for _, c := range []struct {
		json, name string
		v          int
	}{{"layers", "Layers", s.Layers}, {"hidden_size", "Hidden", s.Hidden}, {"dtype_bytes", "DTypeBytes", s.DTypeBytes}} {
		if c.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be >= 1, got %d", field(c.json, c.name), c.v))
		}
	}
	if len(s.LayerKernels) == 0 {
		errs = append(errs, fmt.Errorf("%s is empty: name the kernels of one decoder layer, once per call", field("layer_kernels", "LayerKernels")))
	}
	owner := map[string]string{}
	for _, l := range []struct {
		json, name string
		names      []string
	}{{"layer_kernels", "LayerKernels", s.LayerKernels}, {"step_kernels", "StepKernels", s.StepKernels}, {"sequence_kernels", "SequenceKernels", s.SequenceKernels}} {
		for i, n := range l.names {
			at := fmt.Sprintf("%s[%d]", field(l.json, l.name), i)
			switch o, seen := owner[n]; {
			case n == "":
				errs = append(errs, fmt.Errorf("%s is empty: name a profiled kernel", at))
			case seen && o != l.json:
				errs = append(errs, fmt.Errorf("%s %q is also in %s: a kernel runs per layer, per step or per sequence, not two of them", at, n, o))
			case seen && l.json != "layer_kernels":
				errs = append(errs, fmt.Errorf("%s %q is listed twice: a step or sequence kernel runs once", at, n))
			}
			owner[n] = l.json
		}
	}
	return errors.Join(errs...)
}

// Apply declares s on p: its layer count, its kernel lists, and the
// hidden size and activation bytes of p.Collective (whose bandwidth and
// latency stay the caller's). It refuses a spec that does not fit p's
// kernels: a named kernel the profile did not time, or a profiled kernel
// that no list names (it would be silently left out of every step).
func (s DecoderLayout) Apply(p *Profile) error {
	if err := s.Validate(); err != nil {
		return err
	}
	where := s.Source
	if where == "" {
		where = "costmodel: DecoderLayout"
	}
	if s.Model != "" && p.Provenance.Model != "" && s.Model != p.Provenance.Model {
		return fmt.Errorf("%s: model %q, but the profile (meta.yaml) is of %q", where, s.Model, p.Provenance.Model)
	}
	p.Layers = s.Layers
	p.LayerKernels, p.StepKernels, p.SequenceKernels = s.LayerKernels, s.StepKernels, s.SequenceKernels
	p.Collective.Hidden, p.Collective.DTypeBytes = s.Hidden, s.DTypeBytes
	var errs []error
	for _, l := range []struct {
		json, file string
		names      []string
		curves     map[string][]KernelPoint
	}{
		{"layer_kernels", DenseFile, s.LayerKernels, p.Dense},
		{"step_kernels", DenseFile, s.StepKernels, p.Dense},
		{"sequence_kernels", PerSequenceFile, s.SequenceKernels, p.PerSequence},
	} {
		for i, n := range l.names {
			if _, ok := l.curves[n]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s[%d] %q: the profile's %s has no such kernel (it has %s)", where, l.json, i, n, l.file, names(l.curves)))
			}
		}
	}
	if err := p.unnamedKernels(where, ""); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// unnamedKernels refuses a profiled kernel that none of p's lists names:
// it would be timed by the profiler and silently left out of every step.
func (p Profile) unnamedKernels(lists, advice string) error {
	var errs []error
	for _, f := range []struct {
		file   string
		curves map[string][]KernelPoint
		lists  [][]string
		hint   string
	}{
		{DenseFile, p.Dense, [][]string{p.LayerKernels, p.StepKernels}, "layer_kernels (once per call) or step_kernels"},
		{PerSequenceFile, p.PerSequence, [][]string{p.SequenceKernels}, "sequence_kernels"},
	} {
		for _, n := range slices.Sorted(maps.Keys(f.curves)) {
			if !slices.ContainsFunc(f.lists, func(l []string) bool { return slices.Contains(l, n) }) {
				errs = append(errs, fmt.Errorf("%s: the profile's %s times %q, which no kernel list names: a step would leave it out (name it in %s%s)", lists, f.file, n, f.hint, advice))
			}
		}
	}
	return errors.Join(errs...)
}

// names lists a curve map's kernel names, sorted.
func names(curves map[string][]KernelPoint) string {
	if len(curves) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(curves)), ", ")
}
