package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// freeModel is a cost model that reads no context (ContextFree,
// PrefillContextFree: a batch costs by its decodes' number and its
// chunks' tokens, each term a step of its own) and counts its calls.
type freeModel struct {
	perDecode, perToken, base time.Duration
	calls                     *int
}

func (m freeModel) StepTime(b costmodel.Batch) time.Duration {
	*m.calls++
	d := m.base + time.Duration(len(b.Decode))*m.perDecode
	for _, c := range b.Prefill {
		d += time.Duration(c.NewTokens) * m.perToken
		if c.NewTokens > 300 { // not linear in the tokens
			d += m.base
		}
	}
	return d
}
func (freeModel) ContextFree() bool        { return true }
func (freeModel) PrefillContextFree() bool { return true }

// A step of one prefill chunk beside decodes is priced by the last such
// step's price when it has as many decodes and chunk tokens (price's
// chunkMemo) exactly as the model prices it: 300 random engines
// (sequence caps, chunk caps, token budgets, few blocks), on a model
// whose price reads the decodes' number and the chunk's tokens, on
// Frozen and on a Scaled Frozen, serve requests of a few prompt lengths
// arriving over time, a step a move, against the twin that asks the
// model every time (chunkMemo off): every plan's step time and batch,
// and every outcome, the same. The memo must answer some steps: the
// model is asked fewer times.
func TestChunkMemoIsTheModel(t *testing.T) {
	saved := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 46))
		cfg := Config{BlockSize: 8 << rng.IntN(2), KVBlocks: 200 + rng.IntN(2000), MaxSeqs: 1 + rng.IntN(24)}
		switch rng.IntN(4) {
		case 0:
			cfg.ChunkCap = 32 + rng.IntN(400)
		case 1:
			cfg.MaxBatchedTokens = 64 + rng.IntN(600)
		}
		lengths := []int{16 + rng.IntN(600), 16 + rng.IntN(600), 16 + rng.IntN(60)}
		arr := make([]arrival, 2+rng.IntN(50))
		at := time.Duration(0)
		for i := range arr {
			at += time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
			arr[i] = arrival{at: at, in: lengths[rng.IntN(len(lengths))], out: 1 + rng.IntN(60)}
		}
		kind, perDecode := rng.IntN(3), time.Duration(rng.IntN(3))*time.Millisecond
		drive := func(memo bool) ([]string, int) {
			chunkMemo = memo
			defer func() { chunkMemo = true }()
			calls := 0
			var m costmodel.Model = freeModel{perDecode: perDecode, perToken: 20 * time.Microsecond, base: 5 * time.Millisecond, calls: &calls}
			switch kind {
			case 1:
				m = costmodel.Frozen{}
			case 2:
				m = costmodel.Scaled{Factor: 1.7}
			}
			e, err := New(cfg, m)
			require.NoError(t, err)
			log := stepEach(t, e, arr, nil, nil)
			return log, calls
		}
		fast, fastCalls := drive(true)
		slow, slowCalls := drive(false)
		require.Equal(t, slow, fast, "seed %d", seed)
		if kind == 0 {
			require.LessOrEqual(t, fastCalls, slowCalls, "seed %d", seed)
			saved += slowCalls - fastCalls
		}
	}
	t.Logf("%d calls of the model saved", saved)
	require.Greater(t, saved, 200)
}

// arrival is a request of a random engine's workload: its instant, its
// prompt and output tokens, and its prompt's ids, of blocks of bt tokens
// (none: nil).
type arrival struct {
	at      time.Duration
	in, out int
	prefix  []uint64
	bt      int
}

// sameLogs drives a random engine's scenario with its fast path on and
// off (drive's argument), requires the same log of both, and returns
// the count the fast run gives with its log.
func sameLogs(t *testing.T, seed uint64, drive func(fast bool) ([]string, int)) int {
	t.Helper()
	fast, n := drive(true)
	slow, _ := drive(false)
	require.Equal(t, slow, fast, "seed %d", seed)
	return n
}

// stepEach serves arr on e a step a move, each request added at its
// instant (its Ref its index; before, when not nil, called first), and
// returns every plan and outcome printed, an Add's error in their place;
// each, when not nil, is called with every plan. It stops when what
// waits never fits.
func stepEach(t *testing.T, e *Engine, arr []arrival, before func(i int), each func(p *Plan)) []string {
	t.Helper()
	var log []string
	now, i := time.Duration(0), 0
	for i < len(arr) || !e.Idle() {
		for i < len(arr) && arr[i].at <= now {
			if before != nil {
				before(i)
			}
			if err := e.Add(arr[i].at, Request{Ref: int32(i), Input: arr[i].in, Output: arr[i].out, Prefix: arr[i].prefix, PrefixBlockTokens: arr[i].bt}); err != nil {
				log = append(log, err.Error())
			}
			i++
		}
		p, err := e.Runner().ScheduleUntil(now, now)
		require.NoError(t, err)
		if p == nil {
			if i == len(arr) {
				break
			}
			now = arr[i].at
			continue
		}
		if each != nil {
			each(p)
		}
		log = append(log, fmt.Sprintf("%+v", *p))
		out, err := e.Complete(p.End)
		require.NoError(t, err)
		log = append(log, fmt.Sprintf("%+v", *out))
		now = p.End
	}
	return log
}
