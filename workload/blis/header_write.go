package blis

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// writeYAML writes the header as BLIS's yaml.v3 marshals its TraceHeader:
// keys in BLIS's field order, four-space indentation, empty optional keys
// left out, map keys sorted.
func (h Header) writeYAML(w io.Writer) error {
	b := bufio.NewWriter(w)
	line := func(indent int, key, value string) {
		b.WriteString(strings.Repeat("    ", indent) + key + ":")
		if value != "" {
			b.WriteString(" " + value)
		}
		b.WriteByte('\n')
	}
	line(0, "trace_version", strconv.Itoa(h.Version))
	line(0, "time_unit", yamlString(h.TimeUnit))
	if h.CreatedAt != "" {
		line(0, "created_at", yamlString(h.CreatedAt))
	}
	line(0, "mode", yamlString(h.Mode))
	line(0, "warm_up_requests", strconv.Itoa(h.WarmUpRequests))
	if h.WorkloadSeed != nil {
		line(0, "workload_seed", strconv.FormatInt(*h.WorkloadSeed, 10))
	}
	for _, kv := range [][2]string{{"workload_spec", h.WorkloadSpec}, {"session_context_growth", h.SessionContextGrowth}} {
		if kv[1] != "" {
			line(0, kv[0], yamlString(kv[1]))
		}
	}
	if s := h.Server; s != nil {
		line(0, "server", "")
		for _, kv := range s.fields() {
			line(1, kv[0], kv[1])
		}
	}
	if h.MeasuredRTTMs != 0 {
		line(0, "network", "")
		line(1, "measured_rtt_ms", yamlFloat(h.MeasuredRTTMs))
	}
	if len(h.SLOTargets) > 0 {
		line(0, "goodput_slo_targets", "")
		classes := make([]string, 0, len(h.SLOTargets))
		for c := range h.SLOTargets {
			classes = append(classes, c)
		}
		slices.Sort(classes)
		for _, c := range classes {
			t := h.SLOTargets[c]
			line(1, yamlString(c), "")
			for _, kv := range [][2]any{{"ttft_ms", t.TTFTMs}, {"itl_ms", t.ITLMs}, {"e2e_ms", t.E2EMs}} {
				if v := kv[1].(float64); v != 0 {
					line(2, kv[0].(string), yamlFloat(v))
				}
			}
		}
	}
	return b.Flush()
}

// fields lists the server section's non-zero keys in BLIS's order.
func (s Server) fields() [][2]string {
	var out [][2]string
	add := func(k, v string, zero bool) {
		if !zero {
			out = append(out, [2]string{k, v})
		}
	}
	add("type", yamlString(s.Type), s.Type == "")
	add("model", yamlString(s.Model), s.Model == "")
	add("tensor_parallel", strconv.Itoa(s.TensorParallel), s.TensorParallel == 0)
	add("max_num_seqs", strconv.Itoa(s.MaxNumSeqs), s.MaxNumSeqs == 0)
	add("block_size", strconv.Itoa(s.BlockSize), s.BlockSize == 0)
	add("gpu_memory_utilization", yamlFloat(s.GPUMemoryUtilization), s.GPUMemoryUtilization == 0)
	add("max_model_len", strconv.FormatInt(s.MaxModelLen, 10), s.MaxModelLen == 0)
	return out
}

func yamlFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// yamlString writes s plain when a YAML reader takes it back as the same
// string (letters, digits and a few marks, not starting with a digit or a
// sign, not a YAML word for null or a boolean), else double-quoted (Go's
// escapes are YAML's).
func yamlString(s string) string {
	if s == "" {
		return `""`
	}
	plain := !strings.ContainsAny(s[:1], "0123456789+-.") && !strings.HasSuffix(s, ":")
	for _, c := range s {
		plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:@+", c))
	}
	switch strings.ToLower(s) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n":
		plain = false
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}
