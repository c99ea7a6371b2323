package shard

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// The shard counts issue 15 names: one, two, a prime that divides no
// count of runs here, and more shards than some studies have runs.
var shardCounts = []int{1, 2, 7, 20}

func shardSweep() analysis.Sweep {
	return analysis.Sweep{
		Config:     sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload:   analysis.Poisson(workload.Fixed(2000, 200)),
		Grid:       analysis.Grid{Loads: []float64{3, 1, 2, 2.5}},
		Reps:       3,
		BaseSeed:   7,
		Capacity:   2.69,
		ModelError: analysis.ModelError{Scale: 0.1},
	}
}

// runShards runs every shard of a study split n ways through its file
// format (each written and read back), and returns the shards read.
func runShards(t *testing.T, n int, run func(ID) (*Result, error)) []*Result {
	t.Helper()
	var out []*Result
	for i := range n {
		res, err := run(ID{Index: i, Count: n})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, res.Write(&buf))
		back, err := Read(&buf)
		require.NoError(t, err)
		out = append(out, back)
	}
	return out
}

// Issue 15: a sweep split into 1, 2, 7 or 20 shards and merged is the
// unsharded sweep, byte for byte: every point, every run's summary, the
// knee, the warnings and the model band's curves.
func TestShardedSweepIsTheSweep(t *testing.T) {
	s := shardSweep()
	want, err := s.Run()
	require.NoError(t, err)
	require.NotNil(t, want.Band)
	for _, n := range shardCounts {
		shards := runShards(t, n, func(sh ID) (*Result, error) { return Run(s, sh) })
		got, err := Merge(s, shards)
		require.NoError(t, err)
		require.Equal(t, dump(want), dump(got), "%d shards", n)
		require.Equal(t, fmt.Sprintf("%+v", want.Points), fmt.Sprintf("%+v", got.Points), "%d shards", n)
	}
}

// Issue 15: the same for a dial sweep (each value's sweep, model band and
// probe) and an experiment (per load and on the knee).
func TestShardedDialSweepIsTheDialSweep(t *testing.T) {
	d := analysis.DialSweep{Sweep: shardSweep(), Dial: analysis.DialChunkCap, Values: []float64{0, 256}, Probe: 2}
	d.Sweep.Reps, d.Sweep.Grid.Loads = 2, []float64{1, 2, 3}
	want, err := d.Run()
	require.NoError(t, err)
	for _, n := range shardCounts {
		got, err := MergeDial(d, runShards(t, n, func(sh ID) (*Result, error) { return RunDial(d, sh) }))
		require.NoError(t, err)
		require.Equal(t, dump(want), dump(got), "%d shards", n)
	}
}

func TestShardedExperimentIsTheExperiment(t *testing.T) {
	for _, m := range []analysis.Metric{analysis.MetricGoodput, analysis.MetricKnee} {
		x := analysis.Experiment{
			Hypothesis: analysis.Hypothesis{Claim: "a 256-token chunk cap raises the metric by 5 %", Metric: m, Threshold: 0.05},
			A:          shardSweep().Config,
			B:          analysis.DialChunkCap.Set(shardSweep().Config, 256),
			Workload:   analysis.Poisson(workload.Fixed(2000, 200)),
			Loads:      []float64{1, 2, 2.5, 3},
			Blocks:     3,
		}
		want, err := x.Run()
		require.NoError(t, err)
		for _, n := range shardCounts {
			got, err := MergeExperiment(x, runShards(t, n, func(sh ID) (*Result, error) { return RunExperiment(x, sh) }))
			require.NoError(t, err)
			require.Equal(t, dump(want), dump(got), "%s, %d shards", m.Name, n)
		}
	}
}

// Shard files in a directory: written under their names, read back in
// order, merged.
func TestShardFilesInADirectory(t *testing.T) {
	s := shardSweep()
	s.ModelError = analysis.ModelError{}
	dir := t.TempDir()
	for i := range 3 {
		res, err := Run(s, ID{i, 3})
		require.NoError(t, err)
		path, err := WriteFile(dir, res)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, fmt.Sprintf("shard-%d-of-3.simshard", i)), path)
	}
	shards, err := ReadDir(dir)
	require.NoError(t, err)
	got, err := Merge(s, shards)
	require.NoError(t, err)
	want, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, dump(want), dump(got))
	assert.Equal(t, "shard-07-of-20.simshard", FileName(ID{7, 20}))
}

// Issue 15: a missing shard, a shard given twice, another study's, another
// split's and another kind's are errors naming the shard and its file.
func TestMergeNamesTheWrongShard(t *testing.T) {
	s := shardSweep()
	s.ModelError = analysis.ModelError{}
	s.Grid.Loads = []float64{1, 2}
	write := func(dir string, s analysis.Sweep, sh ID) string {
		res, err := Run(s, sh)
		require.NoError(t, err)
		path, err := WriteFile(dir, res)
		require.NoError(t, err)
		return path
	}
	read := func(paths ...string) []*Result {
		var out []*Result
		for _, p := range paths {
			r, err := ReadFile(p)
			require.NoError(t, err)
			out = append(out, r)
		}
		return out
	}
	dir, elsewhere := t.TempDir(), t.TempDir()
	s0, s1, s2 := write(dir, s, ID{0, 3}), write(dir, s, ID{1, 3}), write(dir, s, ID{2, 3})
	other := s
	other.BaseSeed++
	o1 := write(elsewhere, other, ID{1, 3})
	split := write(elsewhere, s, ID{1, 2})

	_, err := Merge(s, read(s0, s2))
	assert.ErrorIs(t, err, ErrSet)
	assert.ErrorContains(t, err, "shard 1 of 3 is missing (its file would be shard-1-of-3.simshard)")

	_, err = Merge(s, read(s0, s1, s1, s2))
	assert.ErrorContains(t, err, fmt.Sprintf("shard 1 of 3 appears twice: %s (shard 1 of 3) and %s (shard 1 of 3)", s1, s1))

	_, err = Merge(s, read(s0, o1, s2))
	assert.ErrorContains(t, err, o1+" (shard 1 of 3) is of another study")

	_, err = Merge(s, read(s0, split, s2))
	assert.ErrorContains(t, err, split+" (shard 1 of 2) is of a split into 2 shards")

	d := analysis.DialSweep{Sweep: s, Dial: analysis.DialChunkCap, Values: []float64{0}}
	_, err = MergeDial(d, read(s0, s1, s2))
	assert.ErrorContains(t, err, s0+" (shard 0 of 3) is of a sim.Sweep, not a sim.DialSweep")

	_, err = Merge(s, nil)
	assert.ErrorIs(t, err, ErrSet)

	got, err := Merge(s, read(s2, s0, s1)) // any order
	require.NoError(t, err)
	want, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, dump(want), dump(got))
}

// A shard file cut short (a writer killed before the rename would leave
// none; a copy cut short can happen) or not a shard file at all is refused
// by name.
func TestDamagedShardFiles(t *testing.T) {
	s := shardSweep()
	s.ModelError = analysis.ModelError{}
	res, err := Run(s, ID{0, 1})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, res.Write(&buf))
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.simshard")
	require.NoError(t, os.WriteFile(cut, buf.Bytes()[:buf.Len()/2], 0o644))
	_, err = ReadFile(cut)
	assert.ErrorContains(t, err, cut+": damaged shard file")

	flipped := bytes.Clone(buf.Bytes())
	flipped[len(flipped)-5] ^= 0xff // in gzip's trailer: its checksum of the content
	_, err = Read(bytes.NewReader(flipped))
	assert.ErrorContains(t, err, "damaged shard file")

	dir = t.TempDir()
	junk := filepath.Join(dir, "junk.simshard")
	require.NoError(t, os.WriteFile(junk, []byte("{}"), 0o644))
	_, err = ReadDir(dir)
	assert.ErrorContains(t, err, ": not a shard file")

	_, err = ReadDir(t.TempDir())
	assert.ErrorIs(t, err, ErrSet)
}

// An automatic grid is refused, naming Grid.Loads; so is a shard outside
// its count.
func TestShardingRefusesAnAutomaticGrid(t *testing.T) {
	s := shardSweep()
	s.Grid = analysis.Grid{Start: 0.5}
	_, err := Run(s, ID{0, 2})
	assert.ErrorIs(t, err, ErrAutomaticGrid)
	assert.ErrorContains(t, err, "Grid.Loads")
	_, err = Merge(s, nil)
	assert.ErrorIs(t, err, ErrAutomaticGrid)
	d := analysis.DialSweep{Sweep: s, Dial: analysis.DialChunkCap, Values: []float64{0}}
	_, err = RunDial(d, ID{0, 2})
	assert.ErrorIs(t, err, ErrAutomaticGrid)

	_, err = Run(shardSweep(), ID{2, 2})
	assert.ErrorContains(t, err, "Index in [0, Count)")
}

// More shards than runs: the extra shards hold none, and still count.
func TestMoreShardsThanRuns(t *testing.T) {
	s := shardSweep()
	s.ModelError, s.Grid.Loads, s.Reps = analysis.ModelError{}, []float64{1}, 2
	shards := runShards(t, 5, func(sh ID) (*Result, error) { return Run(s, sh) })
	assert.Equal(t, []int{1, 1, 0, 0, 0}, []int{shards[0].Owned(), shards[1].Owned(), shards[2].Owned(), shards[3].Owned(), shards[4].Owned()})
	_, err := Merge(s, shards[:4])
	assert.ErrorContains(t, err, "shard 4 of 5 is missing")

	// A count read from a file is not trusted with memory.
	huge := *shards[0]
	huge.Shard.Count = 1 << 30
	_, err = Merge(s, []*Result{&huge})
	assert.ErrorContains(t, err, "shard 5 of 1073741824 is missing")
	assert.ErrorContains(t, err, "1073741818 more of the 1073741824 shards are missing")
}

// The fingerprint sees every field that changes a run and none that does
// not (Workers, Observe, RunLoads, the order of the loads).
func TestStudyFingerprint(t *testing.T) {
	s := shardSweep()
	fp := func(s analysis.Sweep) string { return studyFingerprint(sweepKind, forFingerprint(s)) }
	base := fp(s)
	assert.True(t, strings.HasPrefix(base, "sha256:"))
	same := s
	same.Workers, same.Observe = 3, func(float64, int) sim.Observer { return nil }
	same.RunLoads = func(analysis.Sweep, []float64) ([][]sim.Summary, error) { return nil, nil }
	same.Grid.Loads = []float64{1, 2, 2.5, 3, 3}
	assert.Equal(t, base, fp(same))
	for name, edit := range map[string]func(*analysis.Sweep){
		"seed":        func(s *analysis.Sweep) { s.BaseSeed++ },
		"reps":        func(s *analysis.Sweep) { s.Reps++ },
		"load":        func(s *analysis.Sweep) { s.Grid.Loads = []float64{1, 2, 2.5, 3.5} },
		"chunk cap":   func(s *analysis.Sweep) { s.Config = analysis.DialChunkCap.Set(s.Config, 256) },
		"lengths":     func(s *analysis.Sweep) { s.Workload = analysis.Poisson(workload.Fixed(2000, 201)) },
		"model error": func(s *analysis.Sweep) { s.ModelError.Scale = 0.2 },
		"capacity":    func(s *analysis.Sweep) { s.Capacity = 2.6900000000000004 },
	} {
		other := s
		edit(&other)
		assert.NotEqual(t, base, fp(other), name)
	}
}

// The shard file carries a summary bit for bit: NaN, ±Inf, −0, and nil
// against empty slices (which gob would not).
func TestShardCodecIsExact(t *testing.T) {
	_, err := summaryLayout()
	require.NoError(t, err, "every field of Summary must be one the shard codec carries")
	sum := sim.Summary{Attainment: math.NaN(), Goodput: math.Copysign(0, -1), Window: time.Minute, Offered: -3,
		TTFT:    stats.Dist{Max: math.Inf(1), P99: math.Inf(-1)},
		Samples: sim.Samples{TTFT: []float64{}, E2E: []float64{1, math.Copysign(0, -1)}, ITL: []sim.ValueCount{{Value: 2, Count: 5}}},
		Classes: []sim.ClassSummary{{}}, Overloaded: true, Replicas: []sim.ReplicaSummary{{Replica: 2, Attainment: math.NaN()}}}
	res := &Result{Kind: sweepKind, Study: "sha256:x", Shard: ID{0, 1}, Runs: 1, runs: []outcome{{summary: sum}}}
	var buf bytes.Buffer
	require.NoError(t, res.Write(&buf))
	back, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, dump(sum), dump(back.runs[0].summary))
	assert.NotNil(t, back.runs[0].summary.Samples.TTFT)
	assert.Nil(t, back.runs[0].summary.Samples.TPOT)
	assert.Nil(t, back.runs[0].summary.Disagg, "a co-located fleet's summary has none")

	// A disaggregated fleet's summary carries its trade.
	sum.Disagg = &sim.DisaggSummary{Prefill: 1, Decode: 3, Remote: 7, RemoteShare: math.NaN(), Bytes: 1e12, KVWait: stats.Dist{N: 2, Max: math.Inf(1)}}
	res.runs[0].summary = sum
	buf.Reset()
	require.NoError(t, res.Write(&buf))
	back, err = Read(&buf)
	require.NoError(t, err)
	require.NotNil(t, back.runs[0].summary.Disagg)
	assert.Equal(t, dump(sum), dump(back.runs[0].summary))
}

// dump writes v as text following pointers, floats by their bits (so NaN
// equals NaN, and −0 differs from +0), slices saying whether they are
// nil, functions left out: what two results that are the same bytes share.
func dump(v any) string {
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(v), 0)
	return b.String()
}

func dumpValue(b *strings.Builder, v reflect.Value, depth int) {
	if depth > 40 {
		b.WriteString("…")
		return
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("invalid")
	case reflect.Float64, reflect.Float32:
		fmt.Fprintf(b, "%v(%x)", v.Float(), math.Float64bits(v.Float()))
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		dumpValue(b, v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			dumpValue(b, v.Index(i), depth+1)
			b.WriteString(" ")
		}
		b.WriteString("]")
	case reflect.Struct:
		b.WriteString(v.Type().Name() + "{")
		for i := range v.NumField() {
			b.WriteString(v.Type().Field(i).Name + ":")
			dumpValue(b, v.Field(i), depth+1)
			b.WriteString(" ")
		}
		b.WriteString("}")
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		b.WriteString(v.Type().String())
	case reflect.Map:
		fmt.Fprintf(b, "map[%d]", v.Len()) // no map in these results
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// A banded experiment is refused, not run or merged without its band.
func TestShardedExperimentRefusesABand(t *testing.T) {
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Metric: analysis.MetricKnee, Threshold: 0.05},
		A:          shardSweep().Config, B: shardSweep().Config,
		Workload:   analysis.Poisson(workload.Fixed(2000, 200)),
		Loads:      []float64{1, 2},
		ModelError: analysis.ModelError{Scale: 0.1},
	}
	_, err := RunExperiment(x, ID{0, 2})
	require.ErrorIs(t, err, analysis.ErrBandedElsewhere)
	_, err = MergeExperiment(x, nil)
	require.ErrorIs(t, err, analysis.ErrBandedElsewhere)
}
