package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// reasons is FastPaths as a map from each path's name to why it is off
// ("" when on), checking that On and Reason agree.
func reasons(t *testing.T, e *Engine) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, p := range e.FastPaths() {
		require.Equal(t, p.On, p.Reason == "", "%s: On %v with reason %q", p.Name, p.On, p.Reason)
		got[p.Name] = p.Reason
	}
	return got
}

// allOn is every fast path on.
func allOn() map[string]string {
	return map[string]string{"runs": "", "residues": "", "cohort": "", "continue": "", "streaks": "", "joins": "", "fcfs-run": "", "chunks": "", "reserves": ""}
}

// with is allOn but for the paths given off, with their reasons.
func with(off map[string]string) map[string]string {
	m := allOn()
	for k, v := range off {
		m[k] = v
	}
	return m
}

// The Atlas default, driven as sim drives it (OmitStreaks), has every
// fast path on; each feature that turns one off says so, in the path's
// Reason, and the hot code reads the same decision.
func TestFastPathsSayWhyTheyAreOff(t *testing.T) {
	linear := costmodel.Linear{PerStep: 20, PerDecodeToken: 0.05, PerDecodeContext: 0.0007, PerPrefillToken: 0.035}
	perContext := costmodel.Func(func(b costmodel.Batch) time.Duration { return time.Duration(20+len(b.Decode)) * time.Millisecond })
	cases := []struct {
		name  string
		cfg   Config
		model costmodel.Model
		omit  bool
		want  map[string]string
	}{
		{"Atlas default, streaks omitted", Config{}, nil, true, allOn()},
		{"streaks listed", Config{}, nil, false, with(map[string]string{
			"streaks":  "the driver lists every emit (OmitStreaks off)",
			"cohort":   "the driver lists every emit (OmitStreaks off)",
			"continue": "the driver lists every emit (OmitStreaks off)",
		})},
		{"speculative decoding", Config{SpeculativeTokens: 3}, nil, true, with(map[string]string{
			"runs":     "speculative decoding: drafts change tokens a step",
			"chunks":   "speculative decoding: drafts change tokens a step",
			"reserves": "speculative decoding: drafts change tokens a step",
			"streaks":  "speculative decoding: drafts change tokens a step",
			"cohort":   "speculative decoding: drafts change tokens a step",
			"continue": "speculative decoding: drafts change tokens a step",
		})},
		{"a model that reads decode contexts through their sum", Config{}, linear, true, with(map[string]string{
			"continue": "the model reads decode contexts (not costmodel.ContextFree)",
		})},
		{"a model that reads each decode context", Config{}, perContext, true, with(map[string]string{
			"cohort":   "the model reads each decode context (not costmodel.DecodeSum)",
			"continue": "the model reads each decode context (not costmodel.DecodeSum); the model reads decode contexts (not costmodel.ContextFree)",
		})},
		{"a block size the residues do not serve", Config{BlockSize: 12}, nil, true, with(map[string]string{
			"residues": "BlockSize 12 is not a power of two up to 64",
			"cohort":   "BlockSize 12 is not a power of two up to 64",
			"continue": "BlockSize 12 is not a power of two up to 64",
		})},
		// V1 without chunked prefill schedules its running requests as
		// with it: every path serves it.
		{"chunked prefill off", Config{DisableChunkedPrefill: true}, nil, true, with(map[string]string{})},
		{"remote KV", Config{RemoteKV: true}, nil, true, with(map[string]string{
			"joins":  "remote KV (Config.RemoteKV): a transfer lands between steps",
			"chunks": "remote KV (Config.RemoteKV): a transfer lands between steps",
		})},
		{"the Priority policy", Config{Policy: Priority{}}, nil, true, with(map[string]string{
			"fcfs-run": "policy engine.Priority is not FCFS: the waiting queue is one heap",
		})},
		{"a policy function", Config{Policy: PolicyFunc(func(a, b Queued) bool { return a.Seq < b.Seq })}, nil, true, with(map[string]string{
			"fcfs-run": "policy engine.PolicyFunc is not FCFS: the waiting queue is one heap",
		})},
		{"speculation and streaks listed", Config{SpeculativeTokens: 1}, nil, false, with(map[string]string{
			"runs":     "speculative decoding: drafts change tokens a step",
			"chunks":   "speculative decoding: drafts change tokens a step",
			"reserves": "speculative decoding: drafts change tokens a step",
			"streaks":  "speculative decoding: drafts change tokens a step; the driver lists every emit (OmitStreaks off)",
			"cohort":   "speculative decoding: drafts change tokens a step; the driver lists every emit (OmitStreaks off)",
			"continue": "speculative decoding: drafts change tokens a step; the driver lists every emit (OmitStreaks off)",
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(c.cfg, c.model)
			require.NoError(t, err)
			e.Runner().OmitStreaks(c.omit)
			require.Equal(t, c.want, reasons(t, e))
			// The hot code's fields are the decision.
			require.Equal(t, []bool{c.want["runs"] == "", c.want["residues"] == "", c.want["cohort"] == "", c.want["continue"] == "", c.want["streaks"] == "", c.want["joins"] == "", c.want["fcfs-run"] == "", c.want["chunks"] == "", c.want["reserves"] == ""},
				[]bool{e.fast.runs, e.fast.residues, e.co.on, e.fast.cont, e.omit, e.fast.joins, e.waiting.fcfs, e.fast.chunks, e.fast.reserves})
		})
	}
	t.Run("the tests' slow twin", func(t *testing.T) {
		e, err := New(Config{}, nil)
		require.NoError(t, err)
		e.Runner().OmitStreaks(true)
		walkRuns(e)
		require.Equal(t, with(map[string]string{
			"residues": "turned off for the tests' slow twin",
			"cohort":   "turned off for the tests' slow twin",
			"continue": "turned off for the tests' slow twin",
		}), reasons(t, e))
	})
}

// The setters that change an input of the decision decide again:
// RecordSteps turns off the paths a step's record needs walked, and back
// on; OmitStreaks turns the streaks and the cohort on and off. What the
// engine does follows: with steps recorded, a join at the sequence cap
// cuts the run (JoinChangesNothing), and Continue plans nothing.
func TestFastPathsFollowTheSetters(t *testing.T) {
	e, end := continuing(t, Config{MaxSeqs: 2}, nil, 100) // two running: at the cap
	require.Equal(t, allOn(), reasons(t, e))

	e.RecordSteps(true)
	const recorded = "steps are recorded (RecordSteps): each step lists every decode context"
	require.Equal(t, with(map[string]string{
		"residues": "steps are recorded (RecordSteps): each step notes its cached blocks as it takes them",
		"cohort":   recorded,
		"continue": recorded,
		"joins":    "steps are recorded (RecordSteps): each step's shape carries the waiting queue's length",
		"chunks":   "steps are recorded (RecordSteps): each step lists its prefill chunks' contexts",
		"reserves": "steps are recorded (RecordSteps): each step notes its cached blocks as it takes them",
	}), reasons(t, e))
	require.Nil(t, e.Runner().Continue(end, time.Hour), "no cohort while steps are recorded")
	p, err := e.Runner().ScheduleUntil(end, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []int{4, 0}, []int{p.Steps, p.Cohort}, "a run walked, to the first finish")
	require.NoError(t, e.Add(end, Request{Ref: 9, Input: 100, Output: 3}))
	require.True(t, e.AtSeqCap())
	require.False(t, e.Runner().JoinChangesNothing(), "a recorded step carries the waiting queue's length")

	e.RecordSteps(false)
	require.Equal(t, allOn(), reasons(t, e))
	require.True(t, e.Runner().JoinChangesNothing(), "at the sequence cap, the join changes no step")

	e.Runner().OmitStreaks(false)
	const listed = "the driver lists every emit (OmitStreaks off)"
	require.Equal(t, with(map[string]string{"streaks": listed, "cohort": listed, "continue": listed}), reasons(t, e))
	e.Runner().OmitStreaks(true)
	require.Equal(t, allOn(), reasons(t, e))
}
