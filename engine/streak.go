package engine

import "time"

// Decode streaks, left out of the Outcome for a driver that accounts them
// in aggregate (sim's decode streaks do).
//
// A request *continues its streak* in an outcome when it emitted at the end
// of the previous outcome with steps, which ended where this one's first
// step starts, and now emits one token at the end of each of this
// outcome's steps, none its first or its last: a plain decode in every
// step. Such a request's Emit says nothing a driver that knows the streak
// does not: with OmitStreaks the engine counts it (Outcome.Streak) instead
// of listing it. Every other Emit is listed as before, and a request whose
// streak ends without one (it emitted last time, and is in none of this
// outcome's steps: preempted, or left out of the token budget) is named in
// Outcome.Left, so that the driver's streak members are always those the
// engine counts. A request the driver aborts is the driver's to settle.
//
// Each outcome with steps is numbered (move), and a request remembers the
// number of the last it emitted in (lastMove): no walk marks the
// requests whose streak ended.

// streakState numbers the outcomes and remembers the streaks that ended.
type streakState struct {
	omit    bool          // streaks are omitted: OmitStreaks, as decideFast decided
	move    uint64        // outcomes with steps so far
	lastEnd time.Duration // the end of the last of them
	prev    uint64        // the outcome a request continuing its streak in this one last emitted in
	left    []int32       // requests whose streak ended while planning
}

// omitStreaks is Runner.OmitStreaks (runner.go), which documents it.
func (e *Engine) omitStreaks(on bool) {
	if e.strict {
		e.checkOmit(on)
	}
	e.fast.omitAsked = on
	e.decideFast()
}

// beginOutcome numbers out, an outcome of steps steps from start to end,
// and notes the outcome a request continuing its streak last emitted in
// (none unless this one starts where that one ended).
func (st *streakState) beginOutcome(out *Outcome, steps int, start, end time.Duration) {
	out.Streak = 0
	out.Left = out.Left[:0]
	if steps == 0 {
		return
	}
	st.prev = 0
	if st.omit && st.move > 0 && start == st.lastEnd {
		st.prev = st.move
	}
	st.move++
	st.lastEnd = end
	if len(st.left) > 0 {
		out.Left = append(out.Left, st.left...)
		st.left = st.left[:0]
	}
}

// emit lists em, or counts it when it continues s's streak, and notes
// that s emitted in this outcome.
func (e *Engine) emit(s *seq, em Emit) {
	if !em.Done {
		if s.lastMove == e.prev && e.prev != 0 {
			s.lastMove = e.move
			e.out.Streak++
			return
		}
		s.lastMove = e.move
	}
	e.out.Emitted = append(e.out.Emitted, em)
}

// satOut notes that s, if it emitted in the last outcome, is in none of
// the next outcome's steps: its streak ends there without an Emit.
func (e *Engine) satOut(s *seq) {
	if e.omit && s.lastMove == e.move && e.move != 0 {
		s.lastMove = 0
		e.left = append(e.left, s.req.Ref)
	}
}

// satOutFrom notes every running request from index i on that the plan
// did not schedule.
func (e *Engine) satOutFrom(i int) {
	if !e.omit {
		return
	}
	for _, s := range e.running[i:] {
		if s.sched == 0 {
			e.satOut(s)
		}
	}
}
