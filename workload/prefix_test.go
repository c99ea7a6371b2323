package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syntheticFingerprint is the fingerprint of 500 requests of a Synthetic
// workload with prefixes p.
func syntheticFingerprint(t *testing.T, p PrefixReuse) string {
	g, err := NewSynthetic(Synthetic{Seed: 11, Count: 500, Arrival: Arrival{Rate: 2},
		Lengths: Independent{Input: LogNormalMean(1500, 0.8), Output: Uniform{Center: 200, RangeRatio: 0.5}}, Prefix: p})
	require.NoError(t, err)
	sum, n, err := Fingerprint(g)
	require.NoError(t, err)
	require.Equal(t, 500, n)
	return sum
}

// conversationFingerprint is the fingerprint of the turns of 40
// conversations with prefixes p, served by the toy driver in 1 s each.
func conversationFingerprint(t *testing.T, p PrefixReuse) string {
	src, err := NewConversations(Conversations{Seed: 11, Count: 40, Arrival: Arrival{Rate: 1},
		Turns: Uniform{Center: 4, RangeRatio: 0.5}, FirstInput: LogNormalMean(600, 0.5),
		UserInput: Uniform{Center: 100, RangeRatio: 0.5}, Output: Uniform{Center: 200, RangeRatio: 0.5},
		Think: Think{Mean: 5 * time.Second}, Prefix: p})
	require.NoError(t, err)
	h := NewHasher()
	for _, r := range serve(t, src, second, nil) {
		h.Add(r.Request)
	}
	return h.Sum()
}

// Uniform prefixes (Zipf 0) give the requests they gave before Zipf
// popularity existed, byte for byte: these fingerprints were taken from
// the generator of commit 3456f7f, for fresh prompts (Synthetic) and for
// prompts that extend a previous turn (Conversations).
func TestPrefixUniformUnchanged(t *testing.T) {
	for _, c := range []struct {
		name                    string
		p                       PrefixReuse
		synthetic, conversation string
	}{
		{"LowReuse", LowReuse,
			"sha256:142a24c6ff0bc27e6b86ca3ac818567b6bd9bb434d9f7726ecd4bdf0138c0b73",
			"sha256:b616d7447daddda019f1657117fa9718d63ed2d9e1dfbb8925b7efeab2fc8bce"},
		{"HighReuse", HighReuse,
			"sha256:561901cb4a7f501bb43a5816a451b38f2ecc89ec676bebd08928f0f683a60560",
			"sha256:a10807edfea19e6d231058ff5510dae7e95ce4628e65dc80d4a1dcd4fdb15ebc"},
		{"16-token blocks", PrefixReuse{Groups: 7, PrefixTokens: 1000, Probability: 0.6, BlockTokens: 16},
			"sha256:b8e06f29bb8819232140e66b1ccde0ea74832bb6ae88677ffc8d5e17b27ec00e",
			"sha256:bddcf0f6601e547c16277890acf6b6f69c85adba347435241c83a3c4e7d6cbaa"},
	} {
		assert.Equal(t, c.synthetic, syntheticFingerprint(t, c.p), "%s, Synthetic", c.name)
		assert.Equal(t, c.conversation, conversationFingerprint(t, c.p), "%s, Conversations", c.name)
	}
}
