package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Profile is a GPU's per-operator kernel profile, the layout LLMServingSim's
// profiler writes (ReadProfile reads it): the CUDA time of every kernel of
// one decoder layer and of one step, measured on synthetic batches. Build
// compiles it into a ProfileModel, which composes a step's time from it:
//
//	step = Layers × (Σ LayerKernels at the step's tokens + attention at its shape + collective)
//	     + Σ StepKernels at the step's tokens
//	     + Σ SequenceKernels at the step's sequences
//	     + StepOverhead
//
// where the step's tokens are Batch.Tokens (prefill chunk tokens, one per
// decode and every draft position verified), its sequences those
// scheduled plus the drafts verified (the LM head computes logits, and the
// sampler samples, at every sequence's last position and at every
// verified draft position), and its attention shape is described on
// ProfileModel.
//
// The zero Profile is invalid: Build needs the kernels' curves, the
// attention grid and the layer count, which the profile cannot know (its
// profiler runs a one-layer copy of the model).
type Profile struct {
	// Dense holds the token-count kernels: name → time over tokens computed
	// in the step (X tokens, µs). Per-layer kernels and once-per-step ones
	// (embedding, the final norm) both live here; LayerKernels and
	// StepKernels say which is which.
	Dense map[string][]KernelPoint
	// PerSequence holds the kernels timed by the step's sequence count
	// (the LM head, the sampler): name → time over sequences (X
	// sequences, µs).
	PerSequence map[string][]KernelPoint
	// Attention is one layer's attention kernel over its grid (µs).
	Attention []AttentionPoint

	// LayerKernels lists the Dense kernels of one decoder layer, a name
	// once per call (Llama's layernorm runs twice). StepKernels lists the
	// Dense kernels run once per step, SequenceKernels the PerSequence
	// ones. ReadProfile fills the three from the profile's architecture
	// (LlamaKernels for "llama"); DecoderLayout.Apply from a model.json.
	LayerKernels, StepKernels, SequenceKernels []string

	// Layers is the decoder layer count (32 for Llama-3.1-8B, 80 for
	// Llama-3.1-70B), > 0. Declared: the profile times one layer.
	Layers int
	// SkewAlpha and DecodeSkewAlpha correct the attention of decodes whose
	// contexts differ: attention = t(mean context) + α × (t(max context)
	// − t(mean context)), α in [0, 1]; 0 applies no correction.
	// SkewAlpha is the varlen kernel's (a step with prefill),
	// DecodeSkewAlpha the pure-decode kernel's. ReadProfile fits each by
	// least squares over the profile's skew.csv rows of that kernel (the
	// estimator of the profile's own pooled fit, which is 97 % varlen
	// rows), or without skew.csv takes the pooled fit of meta.yaml
	// (skew_fit.per_tp.<TP>.alpha_default) for both.
	SkewAlpha, DecodeSkewAlpha float64
	// TP is the tensor-parallel degree the kernels were timed at (each
	// GPU's share); 0 means 1. With TP > 1 each layer adds Collective's
	// two all-reduces.
	TP int
	// Collective prices the all-reduces of tensor parallelism; ignored
	// when TP <= 1, required when TP > 1.
	Collective Collective
	// StepOverhead is a declared fixed cost per step outside the kernels
	// (CPU scheduling and input preparation the GPU waits for), >= 0.
	// Default 0: the kernels alone.
	StepOverhead time.Duration

	// Provenance says where the profile came from; ReadProfile fills it
	// from meta.yaml. It does not change any step time.
	Provenance Provenance
}

// KernelPoint is one profiled kernel time: at X tokens (or sequences) the
// kernel took Us microseconds.
type KernelPoint struct {
	X  int     // tokens or sequences, > 0, strictly increasing along a curve
	Us float64 // CUDA time, µs, > 0
}

// AttentionPoint is one profiled attention time: one prefill chunk of
// PrefillChunk tokens on PrefillContext tokens of KV, batched with
// Decodes decoding sequences of DecodeContext tokens each, took Us
// microseconds in one layer.
type AttentionPoint struct {
	PrefillChunk, PrefillContext int // tokens, >= 0 (0, 0: no prefill)
	Decodes, DecodeContext       int // sequences and tokens each, >= 0 (0, 0: no decode)
	Us                           float64
}

// Provenance is where a profile came from: what a card needs to say so
// that a reader knows which GPU and software its step times describe.
type Provenance struct {
	GPU        string // "NVIDIA RTX PRO 6000 Blackwell Server Edition"
	Model      string // "meta-llama/Llama-3.1-8B"
	Variant    string // "bf16"
	Framework  string // "vLLM 0.19.0, CUDA 13.0"
	ProfiledAt string // as the profiler wrote it, "2026-04-24T12:44:27+00:00"
	Method     string // how the kernels were timed
	Skew       string // where the skew corrections come from
	Source     string // the directory or bundle it was read from
}

// Collective prices one all-reduce of a tensor-parallel layer, the
// message being the step's tokens × Hidden × DTypeBytes. Each decoder
// layer does two (after the attention's output projection and after the
// MLP). The kernel profile times one GPU, so the collective comes from
// elsewhere: measured, the time Measured reads at the message's bytes
// (nccl-tests' all_reduce_perf, ReadAllReduce); else declared, Latency +
// 2 (TP − 1) / TP × message bytes / Bandwidth (a ring all-reduce), a
// figure ProfileModel.CollectiveBand bands. The zero value declares
// nothing (valid at TP 1 only).
type Collective struct {
	Bandwidth  float64       // bytes/s each GPU sends and receives, > 0 when TP > 1 and Measured is nil
	Latency    time.Duration // per all-reduce, >= 0
	Hidden     int           // model hidden size (4096 for Llama-3.1-8B), > 0 when TP > 1
	DTypeBytes int           // bytes per activation element; 0 means 2 (bf16)
	// Measured, when set, prices each all-reduce from the curve instead
	// of Bandwidth and Latency (both then ignored); its Ranks must equal
	// Profile.TP. nil: the declared figures.
	Measured *AllReduceCurve
}

// LlamaKernels returns the kernels of the Llama architecture as
// LLMServingSim's profiler names them: per decoder layer layernorm,
// qkv_proj, rotary_emb, (attention,) o_proj, layernorm, gate_up_proj,
// act_fn, down_proj; once per step embedding and final_layernorm; by
// sequences lm_head and sampler.
func LlamaKernels() (layer, step, sequence []string) {
	return []string{"layernorm", "qkv_proj", "rotary_emb", "o_proj", "layernorm", "gate_up_proj", "act_fn", "down_proj"},
		[]string{"embedding", "final_layernorm"},
		[]string{"lm_head", "sampler"}
}

// tp is the tensor-parallel degree, 0 meaning 1.
func (p Profile) tp() int { return max(p.TP, 1) }

// Validate names every missing curve, every bad sample and every bad
// declared figure.
func (p Profile) Validate() error {
	errs := []error{atLeast("Profile.Layers (declared: the profile times one layer)", p.Layers, 1)}
	if len(p.LayerKernels) == 0 {
		errs = append(errs, errors.New("costmodel: Profile.LayerKernels is empty: name the kernels of one decoder layer (LlamaKernels for Llama)"))
	}
	errs = append(errs, kernelCurves("Dense", p.Dense, p.LayerKernels, p.StepKernels),
		kernelCurves("PerSequence", p.PerSequence, p.SequenceKernels),
		validAttention(p.Attention))
	for _, a := range []struct {
		name string
		v    float64
	}{{"SkewAlpha", p.SkewAlpha}, {"DecodeSkewAlpha", p.DecodeSkewAlpha}} {
		if !(a.v >= 0 && a.v <= 1) {
			errs = append(errs, fmt.Errorf("costmodel: Profile.%s must be in [0, 1], got %v", a.name, a.v))
		}
	}
	errs = append(errs, atLeast("Profile.TP", p.TP, 0), durationNonNegative("Profile.StepOverhead", p.StepOverhead))
	if p.tp() > 1 {
		errs = append(errs, p.Collective.validate(p.tp()))
	}
	return errors.Join(errs...)
}

// kernelCurves checks that every named kernel has a valid curve in curves.
func kernelCurves(field string, curves map[string][]KernelPoint, lists ...[]string) error {
	var errs []error
	seen := map[string]bool{}
	for _, names := range lists {
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			errs = append(errs, validKernel(fmt.Sprintf("Profile.%s[%q]", field, name), curves[name]))
		}
	}
	return errors.Join(errs...)
}

func validKernel(path string, ps []KernelPoint) error {
	if len(ps) == 0 {
		return fmt.Errorf("costmodel: %s has no samples", path)
	}
	var errs []error
	for i, p := range ps {
		if p.X <= 0 {
			errs = append(errs, fmt.Errorf("costmodel: %s[%d].X must be > 0, got %d", path, i, p.X))
		}
		errs = append(errs, positive(fmt.Sprintf("%s[%d].Us", path, i), p.Us))
		if i > 0 && p.X <= ps[i-1].X {
			errs = append(errs, fmt.Errorf("costmodel: %s[%d].X must be > %s[%d].X, got %d <= %d", path, i, path, i-1, p.X, ps[i-1].X))
		}
	}
	return errors.Join(errs...)
}

func validAttention(ps []AttentionPoint) error {
	if len(ps) == 0 {
		return errors.New("costmodel: Profile.Attention has no samples")
	}
	var errs []error
	for i, p := range ps {
		path := fmt.Sprintf("Profile.Attention[%d]", i)
		if p.PrefillChunk < 0 || p.PrefillContext < 0 || p.Decodes < 0 || p.DecodeContext < 0 {
			errs = append(errs, fmt.Errorf("costmodel: %s has a negative coordinate: %+v", path, p))
		}
		if p.PrefillChunk == 0 && p.Decodes == 0 {
			errs = append(errs, fmt.Errorf("costmodel: %s times an empty batch (no prefill chunk, no decode)", path))
		}
		if p.PrefillChunk == 0 && p.PrefillContext > 0 || p.Decodes == 0 && p.DecodeContext > 0 {
			errs = append(errs, fmt.Errorf("costmodel: %s has context without the tokens it belongs to: %+v", path, p))
		}
		errs = append(errs, positive(path+".Us", p.Us))
		if len(errs) >= 10 {
			break // a broken file breaks most rows; the first ten say why
		}
	}
	return errors.Join(errs...)
}

func (c Collective) validate(tp int) error {
	var errs []error
	if c.Measured != nil {
		errs = append(errs, c.validateMeasured(tp))
	} else if !(c.Bandwidth > 0) || math.IsInf(c.Bandwidth, 0) {
		errs = append(errs, fmt.Errorf("costmodel: Profile.Collective.Bandwidth must be a finite number of bytes/s > 0 with TP > 1 (declare it when it is not measured), got %v", c.Bandwidth))
	}
	errs = append(errs, durationNonNegative("Profile.Collective.Latency", c.Latency),
		atLeast("Profile.Collective.Hidden (with TP > 1)", c.Hidden, 1), atLeast("Profile.Collective.DTypeBytes", c.DTypeBytes, 0))
	return errors.Join(errs...)
}

// allReduceUs is one all-reduce of tokens activations at degree tp, µs.
func (c Collective) allReduceUs(tokens float64, tp int) float64 {
	bytes := c.messageBytes(tokens) * 2 * float64(tp-1) / float64(tp)
	return float64(c.Latency)/1e3 + bytes/c.Bandwidth*1e6
}
