package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
)

// TestLateAnswersAreEager holds runs whose engines cache each answer's
// blocks at its request's release (lateAnswers) to the same runs with
// every answer cached by its decodes (twins.noLateAnswers), byte for
// byte, every record and the summary (runSourceScenario, the engines
// checked): random multi-turn conversations (whose answers
// the next turn resends; randomChat's) on one replica or a fleet of two,
// KV pressure with preemption among them (a preempted answer caches its
// blocks first), and injected errors (a failed turn ends its
// conversation). It requires the path taken in every run, blocks found
// cached in most and preemptions in some.
func TestLateAnswersAreEager(t *testing.T) {
	t.Parallel()
	runs := 40
	if testing.Short() {
		runs = 15
	}
	rng := rand.New(rand.NewPCG(51, 7))
	var late, cached, preempted int
	for i := range runs {
		wcfg, ecfg := randomChat(rng)
		wcfg.Arrival.Rate *= 2 // more conversations at once
		if ecfg.KVBlocks == 0 && rng.IntN(2) == 0 {
			ecfg.KVBlocks = 200 + rng.IntN(800) // preemption
		}
		cfg := Config{Seed: rng.Uint64(), Engine: ecfg}
		if rng.IntN(6) == 0 {
			cfg.ErrorRate = 0.2
		}
		if rng.IntN(6) == 0 {
			cfg.Engine, cfg.Fleet = engine.Config{}, Fleet{Replicas: Copies(2, ReplicaConfig{Engine: ecfg}), Router: LeastLoaded{}}
		}
		src := chatSources(t, wcfg)
		a, r, err := runSourceScenario(cfg, src())
		require.NoError(t, err, "scenario %d", i)
		if r.late {
			late++
		}
		if a.sum.Cached > 0 {
			cached++
		}
		if a.sum.Preempt > 0 {
			preempted++
		}
		b, rb, err := runSourceScenarioWith(cfg, src(), twins{noLateAnswers: true})
		require.NoError(t, err, "scenario %d", i)
		require.False(t, rb.late)
		sameBytes(t, b.text, a.text)
	}
	assert.Equal(t, runs, late, "every run caches answers late")
	assert.Greater(t, cached, runs/2, "most runs find cached blocks")
	assert.Greater(t, preempted, runs/5, "some runs preempt")
}
