package enginetest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/engine"
)

// RunScript replays the script at path against the engine and returns
// what the scheduler decided, a line a step, for a caller to compare with
// a golden file (engine's TestScripts compares engine/testdata/*.txt with
// the .golden beside each). The engine is driven through a Checker, so a
// law of the basic contract broken is an error too, as is Engine.Check
// failing after any command.
//
// A script is a line a command; blank lines and lines starting with #
// are copied as they are:
//
//	config key=value…  a new engine (keys: budget seqs chunk block blocks
//	                   watermark maxwaiting maxlen nochunk=1
//	                   policy=priority firstchunk=1 freefirst=1
//	                   remote=1 (Config.RemoteKV); the rest default)
//	add ref=N in=N out=N [prio=N] [remote]
//	                   remote: a Remote request (its prompt's KV
//	                   arrives by transfer; Land)
//	abort ref=N
//	land ref=N         the KV of Remote request N landed (Engine.Land)
//	at N               the clock moves on to N ms (never back)
//	step [N]           N steps (1 by default), each starting when the
//	                   previous ended
//
// Each command is echoed ("> add ref=1 in=10 out=2"), a rejected add
// and every abort print their error, and each step prints
//
//	step @<start> +<step time>: P<ref>:<tokens>+<computed> D<ref> … [| started [refs]] [| preempted [refs]] -> <ref>[*][!] … | wait N run N free N
//
// a prefill chunk P or a decode D for each request scheduled, in
// scheduling order, the Remote requests whose blocks the plan reserved
// ("| reserved [<ref>:<tokens to transfer>+<cached>]"), then each emit (*
// its first token, ! its last), and the queues and free blocks after the
// step; or "idle @<now>", or, when requests wait for their KV to land,
// "no step @<now> | wait N reserved N".
func RunScript(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	var out strings.Builder
	var c *Checker
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
		where := fmt.Sprintf("%s:%d", path, line)
		args, err := parseArgs(fields[1:])
		if err != nil {
			return out.String(), fmt.Errorf("%s: %w", where, err)
		}
		if c == nil && fields[0] != "config" {
			return out.String(), fmt.Errorf("%s: %q before the first config", where, fields[0])
		}
		switch fields[0] {
		case "config":
			e, err := engine.New(scriptConfig(args), nil)
			if err != nil {
				return out.String(), fmt.Errorf("%s: %w", where, err)
			}
			c, now = NewChecker(e), 0
		case "add":
			err := c.Add(now, engine.Request{Ref: int32(args["ref"]), Arrival: now, Input: args["in"], Output: args["out"], Priority: args["prio"], Remote: args["remote"] == 1})
			if err != nil {
				fmt.Fprintf(&out, "rejected %d: %v\n", args["ref"], err)
			}
		case "abort":
			fmt.Fprintf(&out, "abort %d: %v\n", args["ref"], c.Abort(now, int32(args["ref"])))
		case "land":
			fmt.Fprintf(&out, "land %d @%v: %v\n", args["ref"], now, c.Land(now, int32(args["ref"])))
		case "at":
			t := time.Duration(args["_"]) * time.Millisecond
			if t < now {
				return out.String(), fmt.Errorf("%s: at %v, before the clock's %v", where, t, now)
			}
			now = t
		case "step":
			for range max(1, args["_"]) {
				if now, err = scriptStep(c, now, &out); err != nil {
					return out.String(), fmt.Errorf("%s: %w", where, err)
				}
			}
		default:
			return out.String(), fmt.Errorf("%s: unknown command %q", where, fields[0])
		}
		if err := c.Err(); err != nil {
			return out.String(), fmt.Errorf("%s: after %q: %w", where, text, err)
		}
	}
	if err := sc.Err(); err != nil {
		return out.String(), err
	}
	if c != nil {
		if err := c.Finish(); err != nil {
			return out.String(), fmt.Errorf("%s: %w", path, err)
		}
	}
	return out.String(), nil
}

// parseArgs reads key=value fields (a bare value is key "_"); watermark
// is read in per mille, policy as 0 (fcfs) or 1 (priority).
func parseArgs(fields []string) (map[string]int, error) {
	args := map[string]int{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			if f == "remote" { // a flag
				args[f] = 1
				continue
			}
			k, v = "_", f
		}
		switch k {
		case "watermark":
			fv, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, err
			}
			args[k] = int(fv * 1000)
			continue
		case "policy":
			args[k] = map[string]int{"fcfs": 0, "priority": 1}[v]
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		args[k] = n
	}
	return args, nil
}

func scriptConfig(a map[string]int) engine.Config {
	c := engine.Config{
		MaxBatchedTokens: a["budget"], MaxSeqs: a["seqs"], ChunkCap: a["chunk"],
		BlockSize: a["block"], KVBlocks: a["blocks"], MaxWaiting: a["maxwaiting"], MaxModelLen: a["maxlen"],
		Watermark: float64(a["watermark"]) / 1000, DisableChunkedPrefill: a["nochunk"] == 1,
		AdmitOnFirstChunk: a["firstchunk"] == 1, FreeBlocksFirst: a["freefirst"] == 1,
		RemoteKV: a["remote"] == 1,
	}
	if a["policy"] == 1 {
		c.Policy = engine.Priority{}
	}
	return c
}

// scriptStep plans a step at now, prints it, and completes it.
func scriptStep(c *Checker, now time.Duration, out *strings.Builder) (time.Duration, error) {
	p, err := c.Schedule(now)
	if err != nil {
		return now, err
	}
	if p == nil {
		if e := c.Engine(); !e.Idle() {
			fmt.Fprintf(out, "no step @%v | wait %d reserved %d\n", now, e.Waiting(), e.Reserved())
			return now, nil
		}
		fmt.Fprintf(out, "idle @%v\n", now)
		return now, nil
	}
	fmt.Fprintf(out, "step @%v +%v:", p.Start, p.StepTime)
	sched, _ := c.Engine().Scheduled(nil)
	for _, s := range sched {
		if s.Decode {
			fmt.Fprintf(out, " D%d", s.Ref)
		} else {
			fmt.Fprintf(out, " P%d:%d+%d", s.Ref, s.Tokens, s.Computed)
		}
	}
	if len(p.Started) > 0 {
		fmt.Fprintf(out, " | started %v", p.Started)
	}
	if len(p.Preempted) > 0 {
		fmt.Fprintf(out, " | preempted %v", p.Preempted)
	}
	if len(p.Reserved) > 0 {
		out.WriteString(" | reserved [")
		for i, r := range p.Reserved {
			if i > 0 {
				out.WriteString(" ")
			}
			fmt.Fprintf(out, "%d:%d+%d", r.Ref, r.Tokens, r.Cached)
		}
		out.WriteString("]")
	}
	end := p.End
	o, err := c.Complete(end)
	if err != nil {
		return now, err
	}
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
	e := c.Engine()
	fmt.Fprintf(out, " | wait %d run %d free %d\n", e.Waiting(), e.Running(), e.FreeBlocks())
	return end, nil
}
