package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// labelled is a source whose requests all carry a class.
type labelled struct {
	workload.Source
	class string
}

func (l labelled) Next() (workload.Request, error) {
	r, err := l.Source.Next()
	r.Class = l.class
	return r, err
}

// One class with the default SLO is today's run: the same records and
// the same summary, plus the class's own, which is the whole.
func TestOneClassIsTheAggregate(t *testing.T) {
	run := func(classes []Class, class string) (string, Summary) {
		var recs []Record
		cfg := Config{Classes: classes, Window: Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}}
		sum, err := Run(cfg, labelled{poisson(t, 11, 2.2, 1000, workload.Fixed(2000, 200)), class}, keepRecords(&recs))
		require.NoError(t, err)
		return fmt.Sprintf("%+v", recs), sum
	}
	before, plain := run(nil, "chat")
	after, classed := run([]Class{{Name: "chat", SLO: SLO{TTFT: 600 * time.Millisecond}}}, "chat")
	require.Equal(t, before, after)
	require.Len(t, classed.Classes, 2)
	chat, def := classed.Classes[0], classed.Classes[1]
	assert.Equal(t, DefaultClass, def.Name)
	assert.Zero(t, def.Offered)
	assert.Equal(t, classed.Offered, chat.Offered)
	assert.Equal(t, classed.Good, chat.Good)
	assert.Equal(t, classed.Misses, chat.Misses)
	assert.Equal(t, classed.TTFT, chat.TTFT)
	assert.Equal(t, classed.ITL, chat.ITL)
	assert.Equal(t, classed.Attainment, chat.Attainment)
	assert.Less(t, chat.Attainment, 1.0, "2.2 req/s is past Atlas's knee: misses to count")
	classed.Classes = nil
	assert.Equal(t, fmt.Sprintf("%+v", plain), fmt.Sprintf("%+v", classed))
}

// Two classes at Atlas's operating point, half interactive (TTFT 600 ms)
// and half batch (TTFT 30 s): their counts add up to the aggregate, each
// is judged by its own bound, and the batch class, whose bound is 50 times
// looser, meets it more often.
func TestTwoClassesAreJudgedApart(t *testing.T) {
	cfg := Config{Classes: twoClasses(0), Window: Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	src, err := classMix(2.2, 3, workload.Fixed(2000, 200), "interactive", "batch")
	require.NoError(t, err)
	var recs []Record
	sum, err := Run(cfg, src, keepRecords(&recs))
	require.NoError(t, err)
	inter, batch, def := sum.Class("interactive"), sum.Class("batch"), sum.Class(DefaultClass)
	require.NotNil(t, inter)
	require.NotNil(t, batch)
	assert.Zero(t, def.Offered)
	assert.Equal(t, sum.Offered, inter.Offered+batch.Offered)
	assert.Equal(t, sum.Good, inter.Good+batch.Good)
	assert.InDelta(t, 0.5, float64(inter.Offered)/float64(sum.Offered), 0.05, "Poisson thinning: half each")
	assert.Equal(t, 30*time.Second, batch.SLO.TTFT)
	assert.Equal(t, 150*time.Millisecond, batch.SLO.ITL, "inherited from Config.SLO")
	assert.Greater(t, batch.Attainment, inter.Attainment)
	good := map[string]int{}
	for _, r := range recs {
		slo := SLO{TTFT: 600 * time.Millisecond, ITL: 150 * time.Millisecond}
		if r.Class == "batch" {
			slo.TTFT = 30 * time.Second
		}
		if r.Measured && r.Status == StatusOK && r.TTFT() <= slo.TTFT && r.MaxITL <= slo.ITL {
			good[r.Class]++
		}
	}
	assert.Equal(t, good["interactive"], inter.Good)
	assert.Equal(t, good["batch"], batch.Good)
}

func twoClasses(interactivePriority int) []Class {
	return []Class{
		{Name: "interactive", SLO: SLO{TTFT: 600 * time.Millisecond}, Priority: interactivePriority},
		{Name: "batch", SLO: SLO{TTFT: 30 * time.Second}},
	}
}

// classMix is open-loop Poisson arrivals of the classes in equal shares
// at rate, each on its own stream of seed, merged by arrival: what
// analysis.ClassMix builds of equal Parts (package sim's tests cannot
// import it).
func classMix(rate float64, seed uint64, lengths workload.Joint, classes ...string) (workload.Source, error) {
	srcs := make([]workload.Source, len(classes))
	for i, class := range classes {
		g, err := workload.NewSynthetic(workload.Synthetic{
			Seed: workload.NewStream(seed, fmt.Sprintf("sim/classmix/%d", i)).Uint64(), Duration: 365 * 24 * time.Hour,
			Arrival: workload.Arrival{Rate: rate / float64(len(classes))}, Lengths: lengths, Class: class,
		})
		if err != nil {
			return nil, err
		}
		srcs[i] = g
	}
	return workload.Merge(srcs...)
}

// Bad classes, caps and warm-ups are refused, naming the field.
func TestClassesAndCapsValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxConcurrency: -1}, "MaxConcurrency must be >= 0"},
		{Config{Classes: []Class{{Name: "a", SLO: SLO{TTFT: time.Second}}, {Name: "a", SLO: SLO{TTFT: time.Second}}}}, `Classes[1].Name "a" is also Classes[0]'s`},
		{Config{Classes: []Class{{Name: "", SLO: SLO{TTFT: time.Second}}}}, "Classes[0].Name is empty"},
		{Config{Classes: []Class{{Name: DefaultClass, SLO: SLO{TTFT: time.Second}}}}, "default class"},
		{Config{Classes: []Class{{Name: "a"}}}, `Classes[0] ("a") sets no SLO bound`},
		{Config{Classes: []Class{{Name: "a", SLO: SLO{TTFT: -time.Second}}}}, `Classes[0] ("a")`},
		{Config{Warm: []workload.Request{{InputTokens: 100}}}, "Warm[0] has no prefix"},
	} {
		assert.ErrorContains(t, c.cfg.Validate(), c.want)
	}
	// A warm-up larger than the cache is refused when the run starts.
	big := workload.PrefixReuse{Groups: 8, PrefixTokens: 100_000, Probability: 1, BlockTokens: 16}
	_, err := Run(Config{Warm: big.SharedPrompts()}, &list{}, nil)
	assert.ErrorContains(t, err, "does not fit")
}

// A request's own priority reaches its engine without classes too (the
// runner's schedule takes it as it is, with no class to add to it): with
// one sequence a step under the Priority policy, of two requests waiting
// behind a first, the later one, of lower priority, is served first.
func TestOwnPriorityWithoutClasses(t *testing.T) {
	cfg := Config{Engine: engine.Config{MaxSeqs: 1, Policy: engine.Priority{}}}
	src := list{
		{ID: 0, Arrival: 0, InputTokens: 100, OutputTokens: 10},
		{ID: 1, Arrival: time.Millisecond, InputTokens: 100, OutputTokens: 10, Priority: 2},
		{ID: 2, Arrival: 2 * time.Millisecond, InputTokens: 100, OutputTokens: 10, Priority: 1},
	}
	first := map[uint64]time.Duration{}
	_, err := Run(cfg, &src, ObserverFunc(func(r *Record) { first[r.ID] = r.FirstToken }))
	require.NoError(t, err)
	require.Len(t, first, 3)
	assert.Less(t, first[0], first[2])
	assert.Less(t, first[2], first[1], "the request of priority 1 is served before the one of priority 2")
}
