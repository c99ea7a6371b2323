package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/idlabels"
	"github.com/servesim/servesim/workload"
)

// idsAsLabels is a Conversations source that notes every request it yields
// with its ids read as labels (idlabels), and the raw ids apart.
type idsAsLabels struct {
	*workload.ChatSource
	labels   idlabels.Labels
	asLabels *workload.Hasher
	raw      *workload.Hasher
}

func (l *idsAsLabels) Next() (workload.Request, error) {
	r, err := l.ChatSource.Next()
	if err == nil {
		l.raw.Add(r)
		k := r
		k.PrefixHashes = l.labels.Of(r.PrefixHashes)
		l.asLabels.Add(k)
	}
	return r, err
}

// TestConversationIDsAreLabels holds a Conversations workload's block
// ids to labels of content: what a run of it simulates rests on which
// ids are equal, not on their numbers. For the Conversations regime's
// workload (at its small size, 100 requests, every step written), the
// same with half the conversations without a shared system prompt (their
// first ids fresh ones; 400 requests) on one replica and on
// fleets of 4 behind the routers that read ids (PrefixAffinity's default
// (approximate) and events views, ConsistentHash), it records the stream's
// ids as labels (each id the index of its first appearance) and
// every record, step and summary the run gives. Those two fingerprints
// were taken at main f03ae2c, before a turn's ids stopped skipping the
// id its prompt's partial block had been drawn (ChatSource.issue),
// which renumbered the ids after it and moved neither of them; the raw
// ids' fingerprint, noted so that a change of the numbering shows, is
// the one after it.
func TestConversationIDsAreLabels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                string
		fleet               Fleet
		steps               bool
		convs               int     // conversations of 4 turns
		shared              float64 // the probability of a shared system prompt
		raw, labels, output string
	}{
		{"one replica", Fleet{}, true, 100, 0.5,
			"sha256:5ad42a3e112d49ed3ce8da989d614e73d22c2045e9ad882f759022fb5d66651f",
			"sha256:4c0bc3255df24c32c813ece35a648e506712b1c0473ac7ad38aefa5e2ac02114",
			"sha256:dbb810112c36a50fdc116bbff9eb5ddcf4820c4b4d15284e62487a29084b4532"},
		{"PrefixAffinity", Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: PrefixAffinity{}}, false, 100, 0.5,
			"sha256:f6ecb828a896de294924e38e343a029c2d8317c9379d26a82c65c41835aec1f8",
			"sha256:280f4dc0ea2ebccc8cf2b30ae4652ac829976f2998f7db7f8f0cb101888de5cd",
			"sha256:cd89b31b02628373cb65b4d9b0cbb455f2d9ce1e9e318023c7428effa5a9ed40"},
		{"PrefixEvents", Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: PrefixAffinity{View: EventsView{Lag: 50 * time.Millisecond}}}, false, 100, 0.5,
			"sha256:a5bd5a062f2440d99da8464846d19930ca1dbf1cc351f8bb9e8595b2f626570e",
			"sha256:7d1d17a4da80c6257cff926a9fe75b989c0e5907b1e7f949550fcd1ffc437c6f",
			"sha256:5eee0939c6ffc220c220853ab11eb21545d923a25e59bcc3c3e4a179b1fed7f7"},
		{"ConsistentHash", Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: ConsistentHash{}}, false, 100, 0.5,
			"sha256:c4ccf3aff8457f1728a66cd92e3f50ccc4dc997c89883c26ad7e6c1bbde7f28b",
			"sha256:7b8f90193ef07af3504dd694376ab7f9c8d1c2c88a7ca66ef5cca3f332c8b571",
			"sha256:4175cc8eb0ea978ae5083c1c75976f66ad6e69b8d46ad1a6ab50d24a6d5bf517"},
		{"the regime", Fleet{}, true, 25, 1,
			"sha256:02a5b0d3f26f92003271988957838590030af6b7f85df1b0d7b4c31c93ff8a48",
			"sha256:495cadb0a98c90e69b1785a85fbe6daf329d64e4bbc1388b0436d49c76b12974",
			"sha256:af508452ce1f40a8f6d20ea9f5a53e290e123b71ba0369d7f93d6760fddc0dcb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rate := 0.5 * float64(max(1, len(c.fleet.Replicas)))
			src, err := workload.NewConversations(workload.Conversations{Seed: 1, Count: c.convs,
				Arrival: workload.Arrival{Rate: rate}, Turns: workload.Constant{Tokens: 4},
				FirstInput: workload.Uniform{Center: 600, RangeRatio: 0.5}, UserInput: workload.Uniform{Center: 150, RangeRatio: 0.5},
				Output: workload.Uniform{Center: 200, RangeRatio: 0.5}, Think: workload.Think{Mean: 10 * time.Second, Exponential: true},
				Prefix: workload.PrefixReuse{Groups: 16, PrefixTokens: 1024, Probability: c.shared, BlockTokens: 16}})
			require.NoError(t, err)
			l := &idsAsLabels{ChatSource: src, asLabels: workload.NewHasher(), raw: workload.NewHasher()}
			run, _, err := runSourceScenario(Config{Fleet: c.fleet}, l, c.steps)
			require.NoError(t, err)
			require.Equal(t, 4*c.convs, run.sum.Offered)
			require.Positive(t, run.sum.Cached)
			out := sha256.Sum256(run.text)
			t.Logf("%d requests, %d prompt tokens cached", run.sum.Offered, run.sum.Cached)
			assert.Equal(t, c.labels, l.asLabels.Sum(), "the ids as labels")
			assert.Equal(t, c.output, "sha256:"+hex.EncodeToString(out[:]), "every record, step and summary")
			assert.Equal(t, c.raw, l.raw.Sum(), "the raw ids")
		})
	}
}
