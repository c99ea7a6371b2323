package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
)

// strictRun is a strict Runner on an Atlas engine holding two requests
// whose prompts were prefilled by the step that ended at the instant
// returned, and a run of decode steps planned from there (ScheduleUntil,
// 45 ms a step): the state a batched driver is in most of the time.
func strictRun(t *testing.T) (*engine.Runner, *engine.Plan) {
	t.Helper()
	e, err := engine.New(engine.Config{}, costmodel.Frozen{})
	require.NoError(t, err)
	r := e.Runner()
	r.SetStrict(true)
	require.NoError(t, e.Add(0, engine.Request{Ref: 1, Input: 100, Output: 40}))
	require.NoError(t, e.Add(0, engine.Request{Ref: 2, Input: 100, Output: 50}))
	p, err := r.ScheduleUntil(0, time.Hour)
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = r.ScheduleUntil(p.End, time.Hour)
	require.NoError(t, err)
	require.Greater(t, p.Steps, 20, "a run of decode steps")
	return r, p
}

// Each rule of the batched contract, broken on purpose under strict
// mode, panics with a message naming the rule and the call; the same
// calls without strict mode answer as they always did.
func TestStrictModeNamesTheBrokenRule(t *testing.T) {
	cases := []struct {
		rule, call string
		// brk breaks the rule on a strict run (strictRun's state).
		brk func(r *engine.Runner, p *engine.Plan)
	}{
		{"time-forward", "CompleteUntil", func(r *engine.Runner, p *engine.Plan) {
			start, d := p.Start, p.StepTime
			_, _ = r.CompleteUntil(start + 5*d)
			_, _ = r.CompleteUntil(start + d) // back in time
		}},
		{"time-forward", "ScheduleUntil", func(r *engine.Runner, p *engine.Plan) {
			end := p.End
			_, _ = r.Engine().Complete(end)
			_, _ = r.ScheduleUntil(end-1, time.Hour)
		}},
		{"time-forward", "SyncTo", func(r *engine.Runner, p *engine.Plan) {
			r.SyncTo(p.Start - 1)
		}},
		{"no-schedule-while-in-flight", "ScheduleUntil", func(r *engine.Runner, p *engine.Plan) {
			_, _ = r.ScheduleUntil(p.Start+p.StepTime, time.Hour)
		}},
		{"no-schedule-while-in-flight", "Schedule", func(r *engine.Runner, p *engine.Plan) {
			_, _ = r.Engine().Schedule(p.Start + p.StepTime)
		}},
		{"no-schedule-while-in-flight", "Continue", func(r *engine.Runner, p *engine.Plan) {
			r.Continue(p.Start+p.StepTime, time.Hour)
		}},
		{"move-in-flight", "CompleteUntil", func(r *engine.Runner, p *engine.Plan) {
			end := p.End
			_, _ = r.Engine().Complete(end)
			_, _ = r.CompleteUntil(end)
		}},
		{"move-in-flight", "Truncate", func(r *engine.Runner, p *engine.Plan) {
			end := p.End
			_, _ = r.Engine().Complete(end)
			_, _, _ = r.Truncate(end)
		}},
		{"not-past-end", "CompleteUntil", func(r *engine.Runner, p *engine.Plan) {
			_, _ = r.CompleteUntil(p.End + 1)
		}},
		{"not-past-end", "Truncate", func(r *engine.Runner, p *engine.Plan) {
			_, _, _ = r.Truncate(p.End + 1)
		}},
		{"not-past-end", "SyncTo", func(r *engine.Runner, p *engine.Plan) {
			r.SyncTo(p.End + 1)
		}},
		{"cut-only-runs", "Truncate", func(r *engine.Runner, p *engine.Plan) {
			e := r.Engine()
			end := p.End
			_, _ = e.Complete(end)
			require.NoError(t, e.Add(end, engine.Request{Ref: 3, Input: 100, Output: 5}))
			q, _ := e.Schedule(end) // admits request 3: a step planned alone
			_, _, _ = r.Truncate(q.Start)
		}},
		{"no-cut-behind-sync", "Truncate", func(r *engine.Runner, p *engine.Plan) {
			r.SyncTo(p.Start + 10*p.StepTime + 1) // 11 steps' blocks taken
			_, _, _ = r.Truncate(p.Start + 5*p.StepTime + 1)
		}},
		{"continue-at-step-end", "Continue", func(r *engine.Runner, p *engine.Plan) {
			end := p.End
			_, _ = r.Engine().Complete(end)
			r.Continue(end+1, time.Hour)
		}},
		{"continue-at-step-end", "Continue", func(r *engine.Runner, p *engine.Plan) {
			_, _, _ = r.Truncate(p.Start) // dropped whole: no move completed
			r.Continue(p.Start, time.Hour)
		}},
		{"join-needs-move", "JoinChangesNothing", func(r *engine.Runner, p *engine.Plan) {
			_, _ = r.Engine().Complete(p.End)
			r.JoinChangesNothing()
		}},
		{"omit-before-first-step", "OmitStreaks", func(r *engine.Runner, p *engine.Plan) {
			r.OmitStreaks(true)
		}},
	}
	for _, c := range cases {
		t.Run(c.rule+"/"+c.call, func(t *testing.T) {
			r, p := strictRun(t)
			var msg string
			func() {
				defer func() {
					if v := recover(); v != nil {
						msg = fmt.Sprint(v)
					}
				}()
				c.brk(r, p)
			}()
			require.NotEmpty(t, msg, "no panic: the rule was not checked")
			assert.Contains(t, msg, "engine: rule "+c.rule+" broken: "+c.call+" called")

			// Not strict: the same calls do not panic.
			r, p = strictRun(t)
			r.SetStrict(false)
			assert.NotPanics(t, func() { c.brk(r, p) })
		})
	}
}

// The message names the call, its instant and what stood in its way.
func TestStrictModeMessage(t *testing.T) {
	r, p := strictRun(t)
	at := p.Start + p.StepTime
	assert.PanicsWithValue(t,
		fmt.Sprintf("engine: rule no-schedule-while-in-flight broken: ScheduleUntil called at %v with a move in flight until %v", at, p.End),
		func() { _, _ = r.ScheduleUntil(at, time.Hour) })
}

// A driver that follows the rules is never stopped: collecting a run in
// part, looking ahead into it, cutting it, continuing at a step end and
// cutting a continued run whole at its start after a look into its first
// step (as engine's FuzzEngine does) are all within them.
func TestStrictModeLetsTheRulesBe(t *testing.T) {
	r, p := strictRun(t)
	e := r.Engine()
	d := p.StepTime
	r.SyncTo(p.Start + 3*d + 1)
	_, err := r.CompleteUntil(p.Start + 2*d + 1) // behind the look ahead: allowed
	require.NoError(t, err)
	r.SyncTo(p.Start + 3*d)
	busy, end, err := r.Truncate(p.Start + 4*d + 1)
	require.NoError(t, err)
	require.True(t, busy)
	require.NoError(t, e.Add(p.Start+4*d+1, engine.Request{Ref: 3, Input: 100, Output: 5}))
	r.JoinChangesNothing()
	_, err = e.Complete(end)
	require.NoError(t, err)

	c, err := engine.New(engine.Config{}, costmodel.Frozen{})
	require.NoError(t, err)
	cr := c.Runner()
	cr.SetStrict(true)
	cr.OmitStreaks(true)
	require.NoError(t, c.Add(0, engine.Request{Ref: 1, Input: 100, Output: 40}))
	q, err := c.Schedule(0)
	require.NoError(t, err)
	_, err = c.Complete(q.End)
	require.NoError(t, err)
	q = cr.Continue(q.End, time.Hour)
	require.NotNil(t, q, "the cohort's run continues")
	cr.SyncTo(q.Start + 1)
	_, err = cr.CompleteUntil(q.Start)
	require.NoError(t, err)
	busy, _, err = cr.Truncate(q.Start)
	require.NoError(t, err)
	require.False(t, busy, "cut whole")
	q, err = cr.ScheduleUntil(q.Start, time.Hour)
	require.NoError(t, err)
	require.NotNil(t, q)
}
