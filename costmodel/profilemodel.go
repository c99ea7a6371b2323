package costmodel

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ProfileModel is a compiled Profile: it composes a step's time from the
// profiled kernels (see Profile for the sum). It is immutable and safe for
// concurrent use; StepTime does not allocate.
//
// Every curve is read by linear interpolation between profiled points
// and made monotone first, so that more work never costs less
// (Adjustments says how far that moved it). Beyond the profile (more
// tokens, sequences, context or decodes than it timed) the curves
// extrapolate as documented on each, and Price says so.
//
// # Attention
//
// The profile times one layer's attention kernel on one prefill chunk of
// pc tokens over kp tokens of context beside n decodes of kv tokens each,
// A(pc, kp, n, kv). A step is priced on it as follows.
//
//   - Decodes alone: the pure-decode kernel, A(0, 0, ·). Their contexts
//     differ, so they pay the larger of the mean-context reading with the
//     skew correction, (1 − α)·A(n, mean kv) + α·A(n, max kv) with α the
//     pure-decode kernel's (Profile.DecodeSkewAlpha), and the
//     longest-decodes bound, max over j of A(j, j-th longest kv) (j up to
//     512): j decodes of at least some context are never faster than j of
//     exactly it. Uniform decodes read the grid exactly.
//   - One chunk (q, c) beside decodes: the same at A(q, c, ·), with the
//     varlen kernel's α (Profile.SkewAlpha). A step with any prefill runs
//     its decodes on the varlen path, which the profile shows costs far
//     more than pure decode (+66 % for 128 decodes at 1,024 tokens beside
//     a 16-token chunk on the RTX PRO 6000); the grid carries that. A
//     chunk smaller than the smallest profiled one (16 tokens) is priced
//     as that one.
//   - Several chunks, one kernel launch: each chunk's own prefill time
//     P_i = A(q_i, c_i, 0, 0), less the launch they share (P of the
//     smallest profiled chunk) for all but one, plus the largest
//     decode-side increment D_i − P_i, D_i being the reading above for
//     chunk i. One chunk gives D exactly, more chunks are never cheaper
//     than fewer, and each chunk attends to its own context.
//     LLMServingSim sums the chunks' tokens and contexts into one chunk
//     instead, which prices the 310-token tail of a long prompt on its
//     2,048 tokens of context beside a fresh 1,700-token prompt as one
//     2,010-token chunk on 2,048: about three times the attention pairs.
//   - Speculative decoding: the drafts the decodes verify (Batch.Verify)
//     are extra query tokens. They form one more chunk of Σ(P − 1)
//     tokens without context of its own (their keys are the decodes'
//     context, which the decodes already read), and like any chunk they
//     put the step on the varlen path. They also count as tokens in the
//     dense kernels and as sequences in the LM head and sampler, which
//     compute every verified position's logits.
type ProfileModel struct {
	layers          float64
	dense, step     kernelCurve // per layer and once per step, over tokens
	seqs            kernelCurve // over sequences
	attn            *attentionGrid
	tp              int
	collective      Collective
	allReduce       allReduceTable // Collective.Measured compiled; empty when declared
	overheadUs      float64
	launchUs        float64 // a lone smallest chunk's prefill attention: the launch chunks share
	provenance      Provenance
	assumptions     []string
	layerNames      []string
	stepNames       []string
	sequenceNames   []string
	measuredSamples int
}

// Build validates p and compiles it.
func (p Profile) Build() (*ProfileModel, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	attn, err := newAttentionGrid(p.Attention, p.SkewAlpha, p.DecodeSkewAlpha)
	if err != nil {
		return nil, err
	}
	m := &ProfileModel{
		layers:        float64(p.Layers),
		dense:         newKernelCurve("per-layer dense kernels", "tokens", pick(p.Dense, p.LayerKernels)),
		step:          newKernelCurve("once-per-step kernels", "tokens", pick(p.Dense, p.StepKernels)),
		seqs:          newKernelCurve("per-sequence kernels", "sequences", pick(p.PerSequence, p.SequenceKernels)),
		attn:          attn,
		tp:            p.tp(),
		collective:    p.Collective,
		allReduce:     compileAllReduce(p.Collective.Measured),
		overheadUs:    float64(p.StepOverhead) / 1e3,
		provenance:    p.Provenance,
		layerNames:    p.LayerKernels,
		stepNames:     p.StepKernels,
		sequenceNames: p.SequenceKernels,
	}
	m.launchUs = attn.prefill(attn.minChunk, 0)
	m.assumptions = p.assumptions()
	m.measuredSamples = len(p.Attention)
	return m, nil
}

// pick lists the curves of names, a name listed twice twice.
func pick(curves map[string][]KernelPoint, names []string) [][]KernelPoint {
	out := make([][]KernelPoint, 0, len(names))
	for _, n := range names {
		out = append(out, curves[n])
	}
	return out
}

// assumptions are the figures p declares rather than measures.
func (p Profile) assumptions() []string {
	a := []string{fmt.Sprintf("%d decoder layers (declared; the profile times one)", p.Layers)}
	a = append(a, collectiveAssumption(p.tp(), p.Collective))
	if p.StepOverhead > 0 {
		a = append(a, fmt.Sprintf("%v per step outside the kernels (declared)", p.StepOverhead))
	} else {
		a = append(a, "no time outside the kernels (CPU scheduling overlapped or negligible)")
	}
	return append(a, fmt.Sprintf("decode context skew α %.4g on the varlen path, %.4g in pure decode (%s)", p.SkewAlpha, p.DecodeSkewAlpha, orUnstated(p.Provenance.Skew)))
}

// ProfiledStep is one step priced from the profile, its parts and where
// it left the profiled range.
type ProfiledStep struct {
	Time time.Duration // the step: the parts' sum, rounded to the ns
	// Dense, Attention and Collective are the decoder layers' parts (all
	// layers); PerStep the once-per-step kernels, PerSequence the LM
	// head and sampler, Overhead the declared StepOverhead.
	Dense, Attention, Collective, PerStep, PerSequence, Overhead time.Duration
	// Warning says where the step was read outside the profile ("" when
	// it was inside).
	Warning TableWarning
}

// StepTime prices b. It does not allocate.
func (m *ProfileModel) StepTime(b Batch) time.Duration {
	if m == nil || b.Empty() {
		return 0
	}
	s := m.parts(b)
	return stepDuration(s.totalUs() / 1e3)
}

// Price prices b like StepTime, with its parts and a Warning when the
// step lies outside the profiled grid.
func (m *ProfileModel) Price(b Batch) ProfiledStep {
	if m == nil || b.Empty() {
		return ProfiledStep{}
	}
	s := m.parts(b)
	us := func(v float64) time.Duration { return time.Duration(v*1e3 + 0.5) }
	return ProfiledStep{
		Time:  stepDuration(s.totalUs() / 1e3),
		Dense: us(s.dense), Attention: us(s.attention), Collective: us(s.collective),
		PerStep: us(s.step), PerSequence: us(s.seqs), Overhead: us(s.overhead),
		Warning: m.warning(b, s),
	}
}

// stepParts are a step's parts in µs, and its coordinates.
type stepParts struct {
	dense, attention, collective, step, seqs, overhead float64
	tokens, sequences                                  float64
	outTokens, outSeqs, outBytes                       bool
}

func (s stepParts) totalUs() float64 {
	return s.dense + s.attention + s.collective + s.step + s.seqs + s.overhead
}

func (m *ProfileModel) parts(b Batch) stepParts {
	var s stepParts
	s.tokens = float64(b.Tokens())
	s.sequences = float64(b.Seqs() + b.ExtraVerified())
	layer, outT := m.dense.at(s.tokens)
	step, _ := m.step.at(s.tokens)
	seqs, outS := m.seqs.at(s.sequences)
	s.outTokens, s.outSeqs = outT, outS
	s.dense = m.layers * layer
	s.attention = m.layers * m.attention(b)
	s.step, s.seqs, s.overhead = step, seqs, m.overheadUs
	if m.tp > 1 {
		var ar float64
		ar, s.outBytes = m.allReduceUs(s.tokens)
		s.collective = m.layers * 2 * ar
	}
	return s
}

// maxSorted is the most decode contexts attention sorts (on the stack):
// the longest-decodes bound reads the j-th longest for j up to it.
const maxSorted = 512

// attention is one layer's attention for b, µs (see ProfileModel).
func (m *ProfileModel) attention(b Batch) float64 {
	var buf [maxSorted]int
	desc := longest(buf[:0], b.Decode)
	n, total := float64(len(b.Decode)), 0.0
	for _, c := range b.Decode {
		total += float64(c)
	}
	drafts := float64(b.ExtraVerified())
	chunks := len(b.Prefill)
	if drafts > 0 {
		chunks++
	}
	if chunks == 0 {
		return m.attn.batch(0, 0, desc, n, total)
	}
	sum, increment := -float64(chunks-1)*m.launchUs, 0.0
	add := func(q, c float64) {
		own := m.attn.prefill(q, c)
		sum += own
		if n > 0 {
			increment = max(increment, m.attn.batch(q, c, desc, n, total)-own)
		}
	}
	for _, c := range b.Prefill {
		add(float64(c.NewTokens), float64(c.Context))
	}
	if drafts > 0 {
		add(drafts, 0)
	}
	return sum + increment
}

// longest appends to buf (capacity maxSorted) the longest contexts, at
// most maxSorted of them, longest first, without allocating: beyond
// maxSorted a min-heap keeps the longest seen.
func longest(buf []int, contexts []int) []int {
	if len(contexts) <= cap(buf) {
		buf = append(buf, contexts...)
	} else {
		buf = append(buf, contexts[:cap(buf)]...)
		heapify(buf)
		for _, c := range contexts[cap(buf):] {
			if c > buf[0] {
				buf[0] = c
				siftDown(buf, 0)
			}
		}
	}
	slices.SortFunc(buf, func(x, y int) int { return y - x })
	return buf
}

// heapify and siftDown keep h a min-heap.
func heapify(h []int) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func siftDown(h []int, i int) {
	for {
		l, small := 2*i+1, i
		if l < len(h) && h[l] < h[small] {
			small = l
		}
		if r := l + 1; r < len(h) && h[r] < h[small] {
			small = r
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// warning says where b was read outside the profile, or "".
func (m *ProfileModel) warning(b Batch, s stepParts) TableWarning {
	var out []string
	if s.outTokens {
		out = append(out, m.dense.warning(s.tokens))
	}
	if s.outSeqs {
		out = append(out, m.seqs.warning(s.sequences))
	}
	if s.outBytes {
		out = append(out, m.allReduce.warning(m.collective.messageBytes(s.tokens)))
	}
	n := float64(len(b.Decode))
	longest := 0.0
	for _, c := range b.Decode {
		longest = max(longest, float64(c))
	}
	var where []string
	if len(b.Prefill) == 0 {
		where = m.attn.outside(0, 0, n, longest)
	}
	for _, c := range b.Prefill {
		where = append(where, m.attn.outside(float64(c.NewTokens), float64(c.Context), n, longest)...)
	}
	if len(where) > 0 {
		out = append(out, "costmodel: Profile attention read at "+strings.Join(dedupe(where), ", ")+"; scaled in proportion beyond the grid")
	}
	if len(out) == 0 {
		return ""
	}
	return TableWarning(strings.Join(out, "\n"))
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Provenance is where the profile came from (Profile.Provenance).
func (m *ProfileModel) Provenance() Provenance { return m.provenance }

// Assumptions are the figures the model declares rather than measures:
// the layer count, the collective, the time outside the kernels, the
// skew correction.
func (m *ProfileModel) Assumptions() []string { return append([]string(nil), m.assumptions...) }

// ProfileAdjustments says how far making the profile monotone moved it:
// the largest change to one profiled value of each curve, µs, and the
// attention cells the profile did not time.
type ProfileAdjustments struct {
	DenseLifted, DenseLowered       float64 // per-layer dense kernels, summed
	StepLifted, StepLowered         float64
	SequenceLifted, SequenceLowered float64
	AttentionLifted                 float64 // by the uniform-decode grid's monotone majorant
	AttentionLowered                float64 // by the total-context grid's minorant (see ProfileModel)
	AttentionFilled                 int     // grid cells interpolated from their neighbours
	AttentionPoints                 int     // profiled attention points
}

// Adjustments reports how far the monotone curves moved from the profile.
func (m *ProfileModel) Adjustments() ProfileAdjustments {
	return ProfileAdjustments{
		DenseLifted: m.dense.lifted, DenseLowered: m.dense.lowered,
		StepLifted: m.step.lifted, StepLowered: m.step.lowered,
		SequenceLifted: m.seqs.lifted, SequenceLowered: m.seqs.lowered,
		AttentionLifted: m.attn.lifted, AttentionLowered: m.attn.lowered, AttentionFilled: m.attn.filled, AttentionPoints: m.measuredSamples,
	}
}

// String names the model and its source, for a card's settings.
func (m *ProfileModel) String() string {
	p := m.provenance
	return fmt.Sprintf("kernel profile of %s on %s (%s), %g layers", orUnstated(p.Model), orUnstated(p.GPU), orUnstated(p.Framework), m.layers)
}

func orUnstated(s string) string {
	if s == "" {
		return "not stated"
	}
	return s
}
