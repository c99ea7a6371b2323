package tierdone_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/tierdone"
)

// hostTier holds every block offered, by key, and is told when a request
// leaves (a tierdone.Finisher, as sim's host port is).
type hostTier struct{ held map[uint64]bool }

func (h *hostTier) Store(keys, chain []uint64) bool {
	for _, k := range keys {
		h.held[k] = true
	}
	return true
}
func (h *hostTier) Find(keys []uint64, hbm int) (int, bool) { return 0, false }
func (h *hostTier) Load(ref int32, keys []uint64)           {}
func (h *hostTier) Release(ref int32)                       {}

func (h *hostTier) Finished(_ tierdone.Mark, chain []uint64, own int) {
	fmt.Printf("finished: %d blocks stored, the last %d its own\n", len(chain), own)
	shared := chain[:len(chain)-own]
	for _, k := range chain[len(chain)-own:] {
		delete(h.held, k) // no later request computes these keys
	}
	fmt.Printf("the tier keeps %d blocks by key, the shared %d\n", len(h.held), len(shared))
}

// A request whose prompt is six 16-token blocks of content (prefix ids,
// which a later prompt with the same ids computes again) and whose 40
// output tokens fill two blocks more, its own: when it finishes, the engine
// tells the tier which of the blocks it stored no later request will look
// up.
func Example() {
	e, err := engine.New(engine.Config{KVBlocks: 100, BlockSize: 16}, nil)
	if err != nil {
		panic(err)
	}
	tier := &hostTier{held: map[uint64]bool{}}
	if err := e.SetTier(tier); err != nil {
		panic(err)
	}
	ids := []uint64{1, 2, 3, 4, 5, 6}
	_ = e.Add(0, engine.Request{Ref: 0, Input: 96, Output: 40, Prefix: ids, PrefixBlockTokens: 16})
	for now := time.Duration(0); !e.Idle(); {
		p, err := e.Schedule(now)
		if err != nil || p == nil {
			panic(err)
		}
		now = p.End
		if _, err := e.Complete(now); err != nil {
			panic(err)
		}
	}
	// Output:
	// finished: 8 blocks stored, the last 2 its own
	// the tier keeps 6 blocks by key, the shared 6
}
