package engine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/golden"
	"github.com/stretchr/testify/require"
)

// TestScripts replays engine/testdata/*.txt: each line a command, each step
// printed as a line of what the scheduler decided; the output must equal the
// .golden file beside the script (go test ./engine -run Scripts -update
// rewrites them). Check() runs after every command.
//
// Commands:
//
//	config key=value…  (budget seqs chunk block blocks watermark maxwaiting nochunk=1 policy=priority firstchunk=1 freefirst=1)
//	add ref=N in=N out=N [prio=N]
//	abort ref=N
//	step [N]           (N steps, each starting when the previous ended)
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			golden.Check(t, strings.TrimSuffix(f, ".txt")+".golden", []byte(runScript(t, f)))
		})
	}
}

func runScript(t *testing.T, path string) string {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	var out strings.Builder
	var e *Engine
	var now time.Duration
	sc := bufio.NewScanner(fh)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			out.WriteString(sc.Text() + "\n")
			continue
		}
		fmt.Fprintf(&out, "> %s\n", text)
		fields := strings.Fields(text)
		args := parseArgs(t, path, line, fields[1:])
		switch fields[0] {
		case "config":
			e, err = New(scriptConfig(args), nil)
			require.NoError(t, err, "%s:%d", path, line)
			now = 0
		case "add":
			err := e.Add(now, Request{Ref: int32(args["ref"]), Arrival: now, Input: args["in"], Output: args["out"], Priority: args["prio"]})
			if err != nil {
				fmt.Fprintf(&out, "rejected %d: %v\n", args["ref"], err)
			}
		case "abort":
			fmt.Fprintf(&out, "abort %d: %v\n", args["ref"], e.Abort(now, int32(args["ref"])))
		case "step":
			n := max(1, args["_"])
			for range n {
				now = scriptStep(t, e, now, &out)
			}
		default:
			t.Fatalf("%s:%d: unknown command %q", path, line, fields[0])
		}
		require.NoError(t, e.Check(), "%s:%d: invariants after %q", path, line, text)
	}
	require.NoError(t, sc.Err())
	return out.String()
}

func parseArgs(t *testing.T, path string, line int, fields []string) map[string]int {
	args := map[string]int{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v = "_", f
		}
		if k == "watermark" { // per mille
			fv, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, "%s:%d", path, line)
			args[k] = int(fv * 1000)
			continue
		}
		if k == "policy" {
			args[k] = map[string]int{"fcfs": 0, "priority": 1}[v]
			continue
		}
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s:%d: %s", path, line, f)
		args[k] = n
	}
	return args
}

func scriptConfig(a map[string]int) Config {
	c := Config{
		MaxBatchedTokens: a["budget"], MaxSeqs: a["seqs"], ChunkCap: a["chunk"],
		BlockSize: a["block"], KVBlocks: a["blocks"], MaxWaiting: a["maxwaiting"],
		Watermark: float64(a["watermark"]) / 1000, DisableChunkedPrefill: a["nochunk"] == 1,
		AdmitOnFirstChunk: a["firstchunk"] == 1, FreeBlocksFirst: a["freefirst"] == 1,
	}
	if a["policy"] == 1 {
		c.Policy = Priority{}
	}
	return c
}

func scriptStep(t *testing.T, e *Engine, now time.Duration, out *strings.Builder) time.Duration {
	p, err := e.Schedule(now)
	require.NoError(t, err)
	if p == nil {
		fmt.Fprintf(out, "idle @%v\n", now)
		return now
	}
	fmt.Fprintf(out, "step @%v +%v:", p.Start, p.StepTime)
	for i, s := range e.sched {
		if s.decoding {
			fmt.Fprintf(out, " D%d", s.req.Ref)
		} else {
			fmt.Fprintf(out, " P%d:%d+%d", s.req.Ref, e.plan.Batch.Prefill[prefillIndex(e, i)].NewTokens, s.computed)
		}
	}
	if len(p.Started) > 0 {
		fmt.Fprintf(out, " | started %v", p.Started)
	}
	if len(p.Preempted) > 0 {
		fmt.Fprintf(out, " | preempted %v", p.Preempted)
	}
	require.NoError(t, e.Check())
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	out.WriteString(" ->")
	for _, em := range o.Emitted {
		fmt.Fprintf(out, " %d", em.Ref)
		if em.First {
			out.WriteString("*")
		}
		if em.Done {
			out.WriteString("!")
		}
	}
	fmt.Fprintf(out, " | wait %d run %d free %d\n", e.Waiting(), e.Running(), e.FreeBlocks())
	return p.End
}

func prefillIndex(e *Engine, i int) int {
	k := 0
	for _, s := range e.sched[:i] {
		if !s.decoding {
			k++
		}
	}
	return k
}
