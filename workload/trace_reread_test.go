package workload

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rereadRun is everything a replay shows: its description or the error
// that refused it, each request or error Next returned, then its clock
// and count.
func rereadRun(data []byte, cfg TraceConfig) string {
	var b bytes.Buffer
	if cfg.Conversations.Keep {
		rep, err := NewReplay(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			return "refused: " + err.Error()
		}
		d := drive(rep.(*ConversationTrace), time.Second, true)
		fmt.Fprintf(&b, "%v\n%+v\n%v\n%+v %d", rep, d.log, d.err, rep.(*ConversationTrace).Clock(), rep.Count())
		return b.String()
	}
	tr, err := NewTrace(bytes.NewReader(data), "fuzz", cfg)
	if err != nil {
		return "refused: " + err.Error()
	}
	fmt.Fprintln(&b, tr)
	for {
		r, err := tr.Next()
		if err != nil {
			fmt.Fprintf(&b, "%v\n%+v %d", err, tr.Clock(), tr.Count())
			return b.String()
		}
		fmt.Fprintf(&b, "%+v\n", r)
	}
}

// checkReread holds a TargetRate replay that takes its first pass's
// reads (kept whole, or dropped past a small bound) to its slow twin,
// which reads the file again: the same output, byte for byte.
func checkReread(t *testing.T, data []byte, cfg TraceConfig) {
	t.Helper()
	defer func(keep bool, limit int) { keepFirstPass, rereadBytes = keep, limit }(keepFirstPass, rereadBytes)
	keepFirstPass = false
	want := rereadRun(data, cfg)
	keepFirstPass = true
	for _, limit := range []int{16 << 20, 0, 600} {
		rereadBytes = limit
		require.Equal(t, want, rereadRun(data, cfg), "bound %d, config %+v, data %q", limit, cfg, data)
	}
}

// rereadConfigs are the TargetRate configurations checkReread replays
// data in: plain, windowed, filtered, sorted, keeping conversations, and
// at a rate that scales arrivals past time.Duration's range (an error
// naming the row's line).
func rereadConfigs(base TraceConfig) []TraceConfig {
	var out []TraceConfig
	for i := 0; i < 6; i++ {
		cfg := base
		cfg.Transform.TargetRate = 3
		switch i {
		case 1:
			cfg.Transform.WindowStart, cfg.Transform.WindowEnd = 1*time.Second, 3*time.Second
		case 2:
			cfg.Filters = []Filter{{Column: base.Columns.Output, Values: []string{"2", "4"}}}
		case 3:
			cfg.Sort = true
		case 4:
			cfg.Conversations = ConversationReplay{Keep: true, MinThink: time.Second}
		case 5:
			cfg.Transform.TargetRate = 1e-12
		}
		out = append(out, cfg)
	}
	return out
}

func TestRereadIsTheFile(t *testing.T) {
	rows := []string{
		"", // no rows
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}`,
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 1000, "input_length": 40, "output_length": 4, "hash_ids": [7]}
{"timestamp": 2500, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 2]}
{"timestamp": 4000, "input_length": 5, "output_length": 2, "hash_ids": []}`,
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 3000, "input_length": 40, "output_length": 4, "hash_ids": [7, x]}`,
		`{"timestamp": 2000, "input_length": 600, "output_length": 2}
{"timestamp": 1000, "input_length": 40, "output_length": 4}`,
		`{"timestamp": "2024-05-01 10:00:00", "input_length": 600, "output_length": 2}
{"timestamp": "2024-05-01 10:00:02.5", "input_length": 40, "output_length": 4, "hash_ids": [3]}`,
	}
	for _, data := range rows {
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			checkReread(t, []byte(data), cfg)
		}
	}
	var many bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&many, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%d, %d, %d]}`+"\n", 37*i, 1000+i, 1+i%5, i, i+1, i+2)
	}
	for _, cfg := range rereadConfigs(Mooncake(0)) {
		checkReread(t, many.Bytes(), cfg)
	}
	var gen bytes.Buffer
	WriteTrace(&gen, CSV, richWorkload(t))
	for _, cfg := range rereadConfigs(Generic(CSV)) {
		checkReread(t, gen.Bytes(), cfg)
	}
}

// FuzzReread is TestRereadIsTheFile on any input.
func FuzzReread(f *testing.F) {
	seedLines(f, mooncake, false)
	f.Add([]byte(`{"timestamp": 5, "input_length": 600, "output_length": 0, "hash_ids": [1, 2]}
{"timestamp": 1500, "input_length": 6, "output_length": 2, "hash_ids": [1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			checkReread(t, data, cfg)
		}
	})
}
