package blis

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/workload"
)

// Header is the header of a BLIS TraceV2 trace, the YAML file beside
// its CSV (BLIS's sim/workload/tracev2.go TraceHeader), as servesim reads
// and writes it. Keys servesim does not read (kv_offload,
// observed_kv_metrics, or a newer BLIS's) are listed in Other, not
// refused: they describe BLIS's own machinery, not the requests.
type Header struct {
	// Version is trace_version: 3 since BLIS records SLO targets in the
	// header, 2 before (blisVersions); a header without it, or with
	// another, is refused. 0 writes 3.
	Version int
	// TimeUnit is time_unit: "microseconds" (blis run and replay) or "us"
	// (blis observe). BLIS's *_us columns are microseconds whatever it
	// says (BLIS never reads it); servesim refuses any other unit rather
	// than guess which is right. "" (absent) is read as microseconds and
	// written as "microseconds".
	TimeUnit string
	// CreatedAt is created_at (RFC 3339), written by blis observe.
	CreatedAt string
	// Mode is mode: "generated" (blis run), "real" (blis observe) or
	// "replayed" (blis replay). "" writes "generated".
	Mode string
	// WarmUpRequests is warm_up_requests: requests blis observe sent and
	// left out of the trace.
	WarmUpRequests int
	// WorkloadSeed is workload_seed, when the workload was generated.
	WorkloadSeed *int64
	// WorkloadSpec is workload_spec: the spec file, or "preset:<name>".
	WorkloadSpec string
	// SessionContextGrowth is session_context_growth ("accumulate" or "").
	SessionContextGrowth string
	// Server is server: the serving engine observed (blis observe).
	Server *Server
	// MeasuredRTTMs is network.measured_rtt_ms.
	MeasuredRTTMs float64
	// SLOTargets is goodput_slo_targets: per SLO class (the slo_class
	// column, servesim's workload.Request.Class), its TTFT, ITL and E2E bounds.
	SLOTargets map[string]SLOTarget
	// Other lists the keys read but not interpreted, as dotted paths.
	Other []string
}

// Server is a TraceV2 header's server section.
type Server struct {
	Type, Model          string
	TensorParallel       int     // tensor_parallel
	MaxNumSeqs           int     // max_num_seqs: servesim's engine.Config.MaxSeqs
	BlockSize            int     // block_size: engine.Config.BlockSize
	GPUMemoryUtilization float64 // gpu_memory_utilization
	MaxModelLen          int64   // max_model_len
}

// SLOTarget is one SLO class's goodput targets in milliseconds; 0 means
// none.
type SLOTarget struct {
	TTFTMs, ITLMs, E2EMs float64
}

// blisVersions are the TraceV2 versions servesim reads and writes: 2, and
// 3, which added goodput_slo_targets. A later version may change what a
// column means, so it is refused rather than read as if it were 3.
var blisVersions = []int{2, 3}

// blisMicroseconds are the spellings of the one unit BLIS's columns use.
var blisMicroseconds = []string{"microseconds", "microsecond", "us", "µs", "μs"}

// maxHeaderBytes bounds a header file: BLIS's are a few hundred bytes.
const maxHeaderBytes = 1 << 20

// ReadHeader reads a TraceV2 header; name is used in errors, which are
// *workload.ParseErrors naming the line and the key (server.max_num_seqs). An empty
// header, or one without trace_version or of a version other than 2 or 3,
// is an error naming the file and trace_version.
func ReadHeader(r io.Reader, name string) (Header, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxHeaderBytes+1))
	if err != nil {
		return Header{}, fmt.Errorf("blis: reading %s: %w", name, err)
	}
	if len(b) > maxHeaderBytes {
		return Header{}, &workload.ParseError{File: name, Line: 1, Reason: "is over 1 MiB: not a TraceV2 header", Err: workload.ErrMalformed}
	}
	root, err := parseYAML(string(b))
	var ye *yamlError
	if errors.As(err, &ye) {
		return Header{}, &workload.ParseError{File: name, Line: ye.line, Reason: ye.reason, Err: workload.ErrMalformed}
	}
	d := headerDecoder{name: name}
	h := d.header(root)
	if d.err != nil {
		return Header{}, d.err
	}
	if !d.version {
		what := "has no trace_version"
		if len(root.keys) == 0 {
			what = "is empty"
		}
		return Header{}, &workload.ParseError{File: name, Line: 1, Err: workload.ErrMalformed,
			Reason: "the header " + what + ": a TraceV2 header (BLIS's <prefix>.yaml) begins with trace_version: 2 or 3"}
	}
	return h, nil
}

// headerDecoder maps the parsed header onto Header, keeping the first
// error.
type headerDecoder struct {
	name    string
	err     error
	other   []string
	version bool // trace_version was read
}

func (d *headerDecoder) fail(n *yamlNode, path, value, reason string) {
	if d.err == nil {
		d.err = &workload.ParseError{File: d.name, Line: n.line, Field: path, Value: value, Reason: reason, Err: workload.ErrMalformed}
	}
}

// fields calls set for each key of a mapping node, listing the keys set
// does not take in Other.
func (d *headerDecoder) fields(n *yamlNode, path string, set func(key, path string, v *yamlNode) bool) {
	if n.isNull() {
		return
	}
	if n.kind != yamlMap {
		d.fail(n, strings.TrimSuffix(path, "."), "", "is not a mapping")
		return
	}
	for i, k := range n.keys {
		if !set(k, path+k, n.vals[i]) {
			d.other = append(d.other, path+k)
		}
	}
}

func (d *headerDecoder) header(root *yamlNode) Header {
	var h Header
	if root.kind != yamlMap {
		d.fail(root, "", "", "is not a mapping of header keys")
		return h
	}
	d.fields(root, "", func(k, path string, v *yamlNode) bool {
		switch k {
		case "trace_version":
			h.Version = int(d.int(v, path, 0, math.MaxInt32))
			d.version = true
			if d.err == nil && !slices.Contains(blisVersions, h.Version) {
				d.fail(v, path, v.text, "is not a TraceV2 version servesim reads (2 or 3)")
			}
		case "time_unit":
			h.TimeUnit = d.str(v, path)
			if h.TimeUnit != "" && !slices.Contains(blisMicroseconds, h.TimeUnit) {
				d.fail(v, path, h.TimeUnit, "is not microseconds: BLIS's arrival_time_us and send_time_us columns are µs whatever time_unit says, so servesim will not guess")
			}
		case "created_at":
			h.CreatedAt = d.str(v, path)
		case "mode":
			h.Mode = d.str(v, path)
		case "warm_up_requests":
			h.WarmUpRequests = int(d.int(v, path, 0, math.MaxInt32))
		case "workload_seed":
			if !v.isNull() {
				seed := d.int(v, path, math.MinInt64, math.MaxInt64)
				h.WorkloadSeed = &seed
			}
		case "workload_spec":
			h.WorkloadSpec = d.str(v, path)
		case "session_context_growth":
			h.SessionContextGrowth = d.str(v, path)
		case "server":
			h.Server = d.server(v, path)
		case "network":
			d.fields(v, path+".", func(k, path string, v *yamlNode) bool {
				if k == "measured_rtt_ms" {
					h.MeasuredRTTMs = d.float(v, path)
				}
				return k == "measured_rtt_ms"
			})
		case "goodput_slo_targets":
			h.SLOTargets = d.slos(v, path)
		default:
			return false
		}
		return true
	})
	h.Other = d.other
	return h
}

func (d *headerDecoder) server(n *yamlNode, path string) *Server {
	if n.isNull() {
		return nil
	}
	s := &Server{}
	d.fields(n, path+".", func(k, path string, v *yamlNode) bool {
		switch k {
		case "type":
			s.Type = d.str(v, path)
		case "model":
			s.Model = d.str(v, path)
		case "tensor_parallel":
			s.TensorParallel = int(d.int(v, path, 0, math.MaxInt32))
		case "max_num_seqs":
			s.MaxNumSeqs = int(d.int(v, path, 0, math.MaxInt32))
		case "block_size":
			s.BlockSize = int(d.int(v, path, 0, math.MaxInt32))
		case "gpu_memory_utilization":
			s.GPUMemoryUtilization = d.float(v, path)
		case "max_model_len":
			s.MaxModelLen = d.int(v, path, 0, math.MaxInt64)
		default:
			return false
		}
		return true
	})
	return s
}

func (d *headerDecoder) slos(n *yamlNode, path string) map[string]SLOTarget {
	out := map[string]SLOTarget{}
	d.fields(n, path+".", func(class, path string, v *yamlNode) bool {
		var s SLOTarget
		d.fields(v, path+".", func(k, path string, v *yamlNode) bool {
			switch k {
			case "ttft_ms":
				s.TTFTMs = d.float(v, path)
			case "itl_ms":
				s.ITLMs = d.float(v, path)
			case "e2e_ms":
				s.E2EMs = d.float(v, path)
			default:
				return false
			}
			return true
		})
		out[class] = s
		return true
	})
	return out
}

// scalar returns a scalar's text, or fails for a collection.
func (d *headerDecoder) scalar(n *yamlNode, path string) (string, bool) {
	if n.kind != yamlScalar {
		d.fail(n, path, "", "is a collection, not a value")
		return "", false
	}
	return n.text, true
}

func (d *headerDecoder) str(n *yamlNode, path string) string {
	if n.isNull() {
		return ""
	}
	s, _ := d.scalar(n, path)
	return s
}

// int parses an integer in [lo, hi]; null is 0.
func (d *headerDecoder) int(n *yamlNode, path string, lo, hi int64) int64 {
	s, ok := d.scalar(n, path)
	if !ok || n.isNull() {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case n.quoted || err != nil && !errors.Is(err, strconv.ErrRange):
		d.fail(n, path, s, "is not an integer")
	case err != nil || v < lo || v > hi:
		d.fail(n, path, s, fmt.Sprintf("is out of range [%d, %d]", lo, hi))
	}
	return v
}

// float parses a finite number >= 0; null is 0.
func (d *headerDecoder) float(n *yamlNode, path string) float64 {
	s, ok := d.scalar(n, path)
	if !ok || n.isNull() {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if n.quoted || err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		d.fail(n, path, s, "is not a finite number >= 0")
		return 0
	}
	return v
}
