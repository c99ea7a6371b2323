package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
)

// Hasher computes a workload fingerprint over a request stream: sha256 of a
// canonical binary encoding of every field of every request, in order. Two
// streams have the same fingerprint iff they offer the same requests at the
// same instants. Feed it the requests a run pulled (Add), or a whole
// open-loop source (Fingerprint).
type Hasher struct {
	h   hash.Hash
	buf []byte
	n   int
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Add hashes one request.
func (h *Hasher) Add(r Request) {
	b := h.buf[:0]
	for _, v := range []uint64{r.ID, uint64(r.Arrival), uint64(r.InputTokens), uint64(r.OutputTokens),
		r.Conversation, uint64(r.Turn), uint64(r.Priority), uint64(r.PrefixBlockTokens), uint64(len(r.Class)), uint64(len(r.PrefixHashes))} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	if r.Failed {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if r.HashesCoverOutput { // nothing when false: fingerprints from before it stand
		b = append(b, 'A')
	}
	b = append(b, r.Class...)
	for _, id := range r.PrefixHashes {
		b = binary.LittleEndian.AppendUint64(b, id)
	}
	h.h.Write(b)
	h.buf = b
	h.n++
}

// Count is the number of requests added.
func (h *Hasher) Count() int { return h.n }

// Sum returns the fingerprint as "sha256:" and 64 hex digits.
func (h *Hasher) Sum() string { return "sha256:" + hex.EncodeToString(h.h.Sum(nil)) }

// Fingerprint drains an open-loop source and returns its fingerprint and
// request count. (A closed-loop stream depends on the system under test:
// fingerprint its configuration, or the requests a run pulled.)
func Fingerprint(src Source) (string, int, error) {
	h := NewHasher()
	for {
		r, err := src.Next()
		if err == io.EOF {
			return h.Sum(), h.n, nil
		}
		if err != nil {
			return "", h.n, err
		}
		h.Add(r)
	}
}

// FingerprintFile fingerprints a trace replay without parsing it: sha256
// over the file's bytes, then over the configuration that reads and
// transforms it (TraceConfig.AllowEmpty, which changes no request, is left
// out). A conversation-keeping replay (TraceConfig.Conversations.Keep)
// adds its minimum think time, so it never shares the fingerprint of the
// timestamp replay, whose fingerprint is what it was before the option
// existed. (Its request stream also depends on the system under test: the
// fingerprint names the recorded traffic and the rule that times it.)
func FingerprintFile(path string, cfg TraceConfig) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("workload: reading %s: %w", path, err)
	}
	fmt.Fprintf(h, "\x00%+v", replayKeyOf(cfg))
	if c := cfg.Conversations; c.Keep {
		fmt.Fprintf(h, "\x00conversations keep min_think_ns=%d", int64(c.MinThink))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// replayKey is the part of a TraceConfig that decides which requests a
// replay yields, printed with %+v into FingerprintFile's hash. Its fields
// keep TraceConfig's names and order, so a fingerprint stays what it was
// before AllowEmpty existed.
type replayKey struct {
	Format     Format
	Columns    Columns
	Filters    []Filter
	Sort       bool
	KeepOrigin bool
	Transform  Transform
}

func replayKeyOf(c TraceConfig) replayKey {
	return replayKey{c.Format, c.Columns, c.Filters, c.Sort, c.KeepOrigin, c.Transform}
}
