package analysis

import (
	"bytes"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// Test helpers shared with package sim's tests (copies: a test helper is
// not API).

var atlasWorkload = WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
	return workload.NewPoisson(seed, rate, int(rate*700)+10, workload.Fixed(2000, 200))
})

// sameBytes fails with the first differing line, not a megabyte of diff.
func sameBytes(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := range min(len(w), len(g)) {
		if !bytes.Equal(w[i], g[i]) {
			t.Fatalf("line %d differs:\nwant %s\ngot  %s", i+1, w[i], g[i])
		}
	}
	t.Fatalf("lengths differ: %d lines, want %d", len(g), len(w))
}

func serviceTime(in, out int) time.Duration {
	return costmodel.Frozen{}.PrefillTime(in) + time.Duration(out-1)*costmodel.AtlasDecodeStep
}

func twoClasses(interactivePriority int) []sim.Class {
	return []sim.Class{
		{Name: "interactive", SLO: sim.SLO{TTFT: 600 * time.Millisecond}, Priority: interactivePriority},
		{Name: "batch", SLO: sim.SLO{TTFT: 30 * time.Second}},
	}
}

var twoClassWorkload = ClassMix(
	Part{Class: "interactive", Share: 1, Lengths: workload.Fixed(2000, 200)},
	Part{Class: "batch", Share: 1, Lengths: workload.Fixed(2000, 200)},
)

// keepRecords collects every record, without its tokens.
func keepRecords(recs *[]sim.Record) sim.Observer {
	return sim.ObserverFunc(func(r *sim.Record) {
		k := *r
		k.Tokens = nil
		*recs = append(*recs, k)
	})
}
