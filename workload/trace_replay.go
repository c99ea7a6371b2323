package workload

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Replay is a trace replay of either kind, as NewReplay and OpenReplay
// return it: a *Trace (timestamp replay, open-loop) or a
// *ConversationTrace (conversation-keeping, closed-loop: it takes
// Feedback). String says which, for a card.
type Replay interface {
	Source
	Loop() Loop
	Config() TraceConfig
	Count() int
	Close() error
	fmt.Stringer
}

// NewReplay reads a trace from r as cfg says: a *Trace for timestamp
// replay, a *ConversationTrace when cfg.Conversations.Keep is set. name is
// used in errors and in String.
func NewReplay(r io.Reader, name string, cfg TraceConfig) (Replay, error) {
	if !cfg.Conversations.Keep {
		t, err := NewTrace(r, name, cfg)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	c, err := newConversationTrace(r, name, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// OpenReplay opens the trace file at path and reads it as NewReplay does;
// Close closes it.
func OpenReplay(path string, cfg TraceConfig) (Replay, error) {
	if !cfg.Conversations.Keep {
		t, err := OpenTrace(path, cfg)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	c, err := openFile(path, cfg, newConversationTrace)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// openFile opens path and reads it with open; Close closes the file.
func openFile[T interface{ setCloser(io.Closer) }](path string, cfg TraceConfig, open func(io.Reader, string, TraceConfig) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("workload: %w", err)
	}
	t, err := open(f, path, cfg)
	if err != nil {
		f.Close()
		return t, err
	}
	t.setCloser(f)
	return t, nil
}

func (t *Trace) setCloser(c io.Closer) { t.closer = c }

// String describes the replay for a card: the file, its format, the
// replay (timestamp replay for a *Trace) and the Transform, e.g.
//
//	azure.csv (csv), timestamp replay (every row at its recorded instant), own pace
func (t *Trace) String() string {
	return fmt.Sprintf("%s (%v), %v, %s", t.name, t.cfg.Format, t.cfg.Conversations, t.clock())
}

// clock describes the Transform as applied: the window and the time factor.
func (t *Trace) clock() string {
	tr := t.cfg.Transform
	var parts []string
	if tr.WindowStart > 0 || tr.WindowEnd > 0 {
		end := "end"
		if tr.WindowEnd > 0 {
			end = tr.WindowEnd.String()
		}
		parts = append(parts, fmt.Sprintf("window [%v, %s) of the trace", tr.WindowStart, end))
	}
	switch {
	case tr.TargetRate > 0:
		parts = append(parts, fmt.Sprintf("time-scaled ×%.4g to %g req/s", t.factor, tr.TargetRate))
	case t.factor != 1:
		parts = append(parts, fmt.Sprintf("slowdown ×%g", t.factor))
	default:
		parts = append(parts, "own pace")
	}
	return strings.Join(parts, ", ")
}
