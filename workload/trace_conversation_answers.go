package workload

import "slices"

// DefaultAnswers is ConversationReplay.Answers' default: the number of
// conversations whose last answer's ids a conversation-keeping replay
// remembers.
const DefaultAnswers = 1 << 16

// answers gives a conversation-keeping replay's turns ids over their
// answers, as vLLM hashes generated tokens, and a next turn that resends
// an answer the same ids, so that it finds the answer in the prefix cache
// as it would on vLLM (the engine's Request.PrefixCoversOutput).
//
// A trace gives each row ids over its prompt only, and a streaming replay
// has not read turn k+1 when it issues turn k, so the ids of turn k's
// answer cannot be the trace's own. Turn k is given, past the full blocks
// of its prompt (the trace's ids), ids of its own for the blocks its
// answer completes: the block straddling the prompt's end, then the
// answer's, drawn from a 64-bit mix of the conversation, the row and the
// block (a collision with a trace's id, about 2⁻⁶⁴ per pair, is
// ignored). When turn k+1 resends turn k — its block size is turn k's,
// its ids over turn k's full prompt blocks are turn k's (the trace's, not
// the rewritten ones), and its prompt is at least turn k's prompt and
// answer long — its ids over the full blocks of turn k's prompt and answer
// become turn k's, so earlier answers carry over turn after turn; its
// other ids stay the trace's. A turn that does not resend (a new thread in
// the same conversation, a shorter prompt, another block size) keeps its
// trace's ids. An answer that was cut or failed gives ids to blocks that
// were never computed: the next turn misses them, as it would on the
// server.
//
// What the trace's ids over the answer would have shared with other
// conversations (two conversations given the same answer) is lost; the
// conversation's own answer, which chat clients resend, is found.
//
// It remembers the last answer of at most limit conversations, the most
// recently issued: 8 bytes per id of the turn's prompt and answer, plus
// about 100 bytes a conversation. A turn whose conversation was forgotten
// keeps the trace's ids.
type answers struct {
	limit  int
	last   map[uint64]*answer // by conversation
	order  []stamped          // conversations in order of update, some stale
	stamp  uint64
	resent int
}

// answer is a conversation's last turn issued: its block size, prompt
// and output tokens, the trace's ids over its prompt's full blocks and
// the ids it was issued with.
type answer struct {
	block, input, output int
	prompt, ids          []uint64
	stamp                uint64
}

type stamped struct{ conv, stamp uint64 }

func newAnswers(limit int) *answers {
	if limit == 0 {
		limit = DefaultAnswers
	}
	if limit < 0 {
		return nil
	}
	return &answers{limit: limit, last: map[uint64]*answer{}}
}

// issue gives turn r (its row's position seq) its ids: over the answer
// of the turn before it when it resends that turn, over its own answer
// past its prompt's full blocks. Rows without conversation or ids are
// left as they are.
func (a *answers) issue(r *Request, seq uint64) {
	if a == nil || r.Conversation == 0 || r.PrefixHashes == nil || r.PrefixBlockTokens <= 0 || r.HashesCoverOutput {
		return
	}
	p, trace := r.PrefixBlockTokens, r.PrefixHashes
	full := min(r.InputTokens/p, len(trace))
	ids := make([]uint64, 0, blocks(r.InputTokens+max(r.OutputTokens, 0), p))
	prev := a.last[r.Conversation]
	if prev != nil && prev.resentBy(r) {
		done := (prev.input + prev.output) / p // full blocks of its prompt and answer
		ids = append(ids, prev.ids[:done]...)
		ids = append(ids, trace[done:full]...)
		a.resent++
	} else {
		ids = append(ids, trace[:full]...)
	}
	for u := len(ids); u < cap(ids); u++ {
		ids = append(ids, answerID(r.Conversation, seq, u))
	}
	r.PrefixHashes, r.HashesCoverOutput = ids, true
	a.remember(r.Conversation, &answer{block: p, input: r.InputTokens, output: max(r.OutputTokens, 0), prompt: trace[:full], ids: ids})
}

// resentBy says whether turn r resends this turn's prompt and answer.
func (t *answer) resentBy(r *Request) bool {
	n := t.input / t.block
	return r.PrefixBlockTokens == t.block && r.InputTokens >= t.input+t.output &&
		len(r.PrefixHashes) >= (t.input+t.output)/t.block && slices.Equal(r.PrefixHashes[:n], t.prompt[:n])
}

func (a *answers) remember(conv uint64, t *answer) {
	a.stamp++
	t.stamp = a.stamp
	a.last[conv] = t
	a.order = append(a.order, stamped{conv, a.stamp})
	for len(a.last) > a.limit {
		s := a.order[0]
		a.order = a.order[1:]
		if e := a.last[s.conv]; e != nil && e.stamp == s.stamp {
			delete(a.last, s.conv)
		}
	}
	if len(a.order) > 2*a.limit+64 { // drop stale entries
		a.order = slices.DeleteFunc(a.order, func(s stamped) bool { e := a.last[s.conv]; return e == nil || e.stamp != s.stamp })
	}
}

// answerID is the id of block unit of the answer of the turn at row seq
// of conversation conv: splitmix64 over the three.
func answerID(conv, seq uint64, unit int) uint64 {
	h := conv*0x9e3779b97f4a7c15 ^ seq*0xbf58476d1ce4e5b9 ^ uint64(unit)*0x94d049bb133111eb ^ 0xa115e4
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}
