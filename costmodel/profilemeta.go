package costmodel

import (
	"errors"
	"fmt"
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
