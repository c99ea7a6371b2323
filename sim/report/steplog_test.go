package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// timeline keeps every step one by one (expanded with sim.Step.All) and
// every record of a run.
type timeline struct {
	steps   []sim.Step
	records records
}

func (tl *timeline) Observe(r *sim.Record) { tl.records.Observe(r) }

func (tl *timeline) ObserveStep(s *sim.Step) {
	for one := range s.All() {
		k := *one
		k.Decode = append([]int(nil), one.Decode...)
		k.Prefill = append([]costmodel.Chunk(nil), one.Prefill...)
		k.KVUsed = append([]int(nil), one.KVUsed...)
		k.KVCached = append([]int(nil), one.KVCached...)
		tl.steps = append(tl.steps, k)
	}
}

// chunkedRun runs the Atlas replica with a 256-token chunk cap near its
// knee for a few minutes (or a fleet of replicas behind round robin, at
// that load each), handing records and steps to obs.
func chunkedRun(t *testing.T, replicas int, obs ...sim.Observer) (sim.Summary, *timeline) {
	t.Helper()
	tl := &timeline{}
	cfg := sim.Config{Engine: engine.Config{ChunkCap: 256}, Window: sim.Window{Warmup: 20 * time.Second, Horizon: 140 * time.Second}}
	if replicas > 1 {
		cfg.Fleet.Replicas = make([]sim.ReplicaConfig, replicas)
		for i := range cfg.Fleet.Replicas {
			cfg.Fleet.Replicas[i].Engine = cfg.Engine
		}
		cfg.Engine = engine.Config{}
	}
	src, err := workload.NewPoisson(3, 1.8*float64(replicas), 250*replicas, workload.Fixed(2000, 200))
	require.NoError(t, err)
	sum, err := sim.Run(cfg, src, Observers(append(obs, tl)...))
	require.NoError(t, err)
	return sum, tl
}

// stepLine is a step log's line.
type stepLine struct {
	Replica     int     `json:"replica"`
	Start       float64 `json:"start_s"`
	Duration    float64 `json:"duration_s"`
	Composition string  `json:"composition"`
	Decodes     int     `json:"decodes"`
	Context     int     `json:"decode_context"`
	Prefill     []struct {
		New     int `json:"new"`
		Context int `json:"context"`
	} `json:"prefill"`
	PrefillTokens int `json:"prefill_tokens"`
	Cached        int `json:"cached_tokens"`
	Preempted     int `json:"preempted"`
	Waiting       int `json:"waiting"`
	Running       int `json:"running"`
	KVUsed        int `json:"kv_used"`
	KVCached      int `json:"kv_cached"`
	KVBlocks      int `json:"kv_blocks"`
}

// The step log has one line per step, in StepColumns' order, with the
// step's own figures: the chapter's mixed step of 31 decodes and one
// 256-token chunk lasts 0.07396 s, and the durations add up to the busy
// time.
func TestStepLogWritesEveryStep(t *testing.T) {
	var buf bytes.Buffer
	log := NewStepLog(&buf)
	sum, tl := chunkedRun(t, 1, log)
	require.NoError(t, log.Flush())

	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	var lines []stepLine
	for sc.Scan() {
		assert.Equal(t, StepColumns(), keysOf(t, sc.Bytes()))
		var l stepLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		lines = append(lines, l)
	}
	require.Len(t, lines, len(tl.steps))
	mixed := 0
	var total float64
	for i, l := range lines {
		s := tl.steps[i]
		assert.InDelta(t, s.Start.Seconds(), l.Start, 1e-12)
		assert.InDelta(t, s.Duration.Seconds(), l.Duration, 1e-12)
		assert.Equal(t, s.Composition().String(), l.Composition)
		assert.Equal(t, len(s.Decode), l.Decodes)
		assert.Equal(t, sumInts(s.Decode), l.Context)
		require.Len(t, l.Prefill, len(s.Prefill))
		for k, c := range s.Prefill {
			assert.Equal(t, c.NewTokens, l.Prefill[k].New)
			assert.Equal(t, c.Context, l.Prefill[k].Context)
		}
		assert.Equal(t, []int{s.KVUsed[0], s.KVCached[0], 28672, s.Waiting, s.Running, s.CachedTokens, s.Preempted},
			[]int{l.KVUsed, l.KVCached, l.KVBlocks, l.Waiting, l.Running, l.Cached, l.Preempted})
		if l.Decodes == 31 && len(l.Prefill) == 1 && l.PrefillTokens == 256 {
			mixed++
			assert.Equal(t, 0.07396, l.Duration, "the chapter's mixed step")
			assert.Equal(t, "mixed", l.Composition)
		}
		// The busy time counts what of each step lies in the window.
		total += max(0, min(l.Start+l.Duration, 140)-max(l.Start, 20))
	}
	assert.Greater(t, mixed, 10)
	assert.InDelta(t, sum.Replicas[0].Busy*sum.Window.Seconds(), total, 1e-6, "durations add up to the busy time")
}

// keysOf is the keys of a JSON object, in order.
func keysOf(t *testing.T, line []byte) []string {
	t.Helper()
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &raw))
	dec := json.NewDecoder(bytes.NewReader(line))
	var keys []string
	_, err := dec.Token() // {
	require.NoError(t, err)
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// runOfDecodes is a run of 3 identical decode steps, as a fast-forwarded
// replica delivers it: requests 7 and 8 continue, 9 resumes after a
// preemption with its 188 blocks of 16 tokens found cached.
func runOfDecodes() sim.Step {
	return sim.Step{Replica: 1, Start: 1500 * time.Millisecond, Duration: 45 * time.Millisecond, Count: 3,
		Decode: []int{2100, 2400, 3008}, CachedTokens: 512, Preempted: 1, Waiting: 2, Running: 3,
		KVUsed: []int{500, 500, 501}, KVCached: []int{40, 40, 40}, KVBlocks: 28672,
		Requests: []sim.StepRequest{
			{ID: 7, Tokens: 1, Computed: 2100, Decode: true},
			{ID: 8, Tokens: 1, Computed: 2400, Decode: true},
			{ID: 9, Tokens: 1, Computed: 3008, Cached: 3008, Decode: true, Kind: engine.ScheduledResumed},
		}}
}

// A run of identical steps is written exactly as its steps one by one
// (sim.Step.All) would be.
func TestStepLogExpandsARunAsAll(t *testing.T) {
	run := runOfDecodes()
	var whole, each bytes.Buffer
	a, b := NewStepLog(&whole), NewStepLog(&each)
	a.ObserveStep(&run)
	for one := range run.All() {
		b.ObserveStep(one)
	}
	require.NoError(t, a.Flush())
	require.NoError(t, b.Flush())
	assert.Equal(t, each.String(), whole.String())
	assert.Equal(t, 3, strings.Count(whole.String(), "\n"))
	assert.Contains(t, whole.String(), `{"replica":1,"start_s":1.5,"duration_s":0.045,"composition":"decode","decodes":3,"decode_context":7508,`+
		`"prefill":[],"prefill_tokens":0,"cached_tokens":512,"preempted":1,"waiting":2,"running":3,"kv_used":500,"kv_cached":40,"kv_blocks":28672,`+
		`"requests":[{"id":7,"kind":"continuing","tokens":1,"computed":2100,"cached":0,"decode":true},`+
		`{"id":8,"kind":"continuing","tokens":1,"computed":2400,"cached":0,"decode":true},`+
		`{"id":9,"kind":"resumed","tokens":1,"computed":3008,"cached":3008,"decode":true}]}`)
	// Two steps later every request has two more tokens, and continues.
	assert.Contains(t, whole.String(), `{"replica":1,"start_s":1.59,"duration_s":0.045,"composition":"decode","decodes":3,"decode_context":7514,`+
		`"prefill":[],"prefill_tokens":0,"cached_tokens":0,"preempted":0,"waiting":2,"running":3,"kv_used":501,"kv_cached":40,"kv_blocks":28672,`+
		`"requests":[{"id":7,"kind":"continuing","tokens":1,"computed":2102,"cached":0,"decode":true},`+
		`{"id":8,"kind":"continuing","tokens":1,"computed":2402,"cached":0,"decode":true},`+
		`{"id":9,"kind":"continuing","tokens":1,"computed":3010,"cached":0,"decode":true}]}`)
}

// Logging a step allocates nothing once the buffers have grown.
func TestStepLogAllocatesNothingPerStep(t *testing.T) {
	run := runOfDecodes()
	mixed := sim.Step{Start: time.Second, Duration: 73960 * time.Microsecond, Count: 1, Decode: make([]int, 31),
		Prefill: []costmodel.Chunk{{NewTokens: 256, Context: 512}}, KVUsed: []int{9}, KVCached: []int{0}, KVBlocks: 28672}
	log := NewStepLog(io.Discard)
	log.ObserveStep(&run)
	allocs := testing.AllocsPerRun(200, func() {
		log.ObserveStep(&run)
		log.ObserveStep(&mixed)
	})
	assert.Zero(t, allocs)
	require.NoError(t, log.Flush())
}

func BenchmarkStepLog(b *testing.B) {
	run := runOfDecodes()
	log := NewStepLog(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		log.ObserveStep(&run)
	}
}

// A write error is kept, and later steps are dropped.
func TestStepLogKeepsTheFirstError(t *testing.T) {
	run := runOfDecodes()
	log := NewStepLog(&failing{n: 100})
	for range 100 {
		log.ObserveStep(&run)
	}
	assert.ErrorIs(t, log.Flush(), errDisk)
	assert.ErrorIs(t, log.Err(), errDisk)
}
