package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// EventPattern matches the names of the files EventDir writes: one per
// run of a sweep, load=<load>-rep=<r>.jsonl.
const EventPattern = "load=*-rep=*.jsonl"

// EventFileName is the file of the run at load, replication rep: the
// load in its shortest exact form (strconv 'g', -1), so that the name
// gives the load back exactly.
func EventFileName(load float64, rep int) string {
	return "load=" + strconv.FormatFloat(load, 'g', -1, 64) + "-rep=" + strconv.Itoa(rep) + ".jsonl"
}

// EventDir writes every run of a sweep's per-request records as JSON
// Lines, a file per (load, replication) named by EventFileName, so that
// its figures can be re-analysed (CurveFromEvents). Its Observe is a
// analysis.Sweep's Observe; runs call it in parallel.
type EventDir struct {
	dir   string
	mu    sync.Mutex
	files []*os.File
	lines []*EventJSONL
	err   error
}

// NewEventDir makes dir and removes the event files of earlier runs
// from it (files matching EventPattern, and no other), so that it holds
// only this run's.
func NewEventDir(dir string) (*EventDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stale, err := filepath.Glob(filepath.Join(dir, EventPattern))
	if err != nil {
		return nil, err
	}
	for _, path := range stale {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("report: removing an earlier run's events: %w", err)
		}
	}
	return &EventDir{dir: dir}, nil
}

// Observe opens the file of one run.
func (e *EventDir) Observe(load float64, rep int) sim.Observer {
	f, err := os.Create(filepath.Join(e.dir, EventFileName(load, rep)))
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.err = errors.Join(e.err, err)
		return nil
	}
	j := NewEventJSONL(f)
	e.files = append(e.files, f)
	e.lines = append(e.lines, j)
	return j
}

// Close flushes and closes every file and returns the first problem.
func (e *EventDir) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	for i, f := range e.files {
		err = errors.Join(err, e.lines[i].Flush(), f.Close())
	}
	e.files, e.lines = nil, nil
	return err
}

// LoadEvents are the records of one load's runs, read back from a folder
// of events.
type LoadEvents struct {
	Load float64
	Runs [][]sim.Record // replication r's records, r from 0
}

// ReadEventDir reads a folder of events written by EventDir (or by a
// program with the same names, as examples/capacity): every file
// matching EventPattern, grouped by load in increasing order, each
// load's replications numbered from 0 without gaps. The loads are read
// from the names: exact for EventDir's; a program that rounds them in the
// names (examples/capacity writes %.4g) gives the rounded loads.
func ReadEventDir(dir string) ([]LoadEvents, error) {
	paths, err := filepath.Glob(filepath.Join(dir, EventPattern))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("report: %s: no event files (%s)", dir, EventPattern)
	}
	byLoad := map[float64]map[int]string{}
	for _, p := range paths {
		load, rep, err := parseEventName(filepath.Base(p))
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", p, err)
		}
		if byLoad[load] == nil {
			byLoad[load] = map[int]string{}
		}
		byLoad[load][rep] = p
	}
	loads := make([]float64, 0, len(byLoad))
	for l := range byLoad {
		loads = append(loads, l)
	}
	slices.Sort(loads)
	out := make([]LoadEvents, len(loads))
	for i, l := range loads {
		out[i].Load = l
		for r := range len(byLoad[l]) {
			p, ok := byLoad[l][r]
			if !ok {
				return nil, fmt.Errorf("report: %s: load %v has %d runs but no replication %d", dir, l, len(byLoad[l]), r)
			}
			recs, err := ReadEvents(p)
			if err != nil {
				return nil, err
			}
			out[i].Runs = append(out[i].Runs, recs)
		}
	}
	return out, nil
}

// parseEventName reads load and replication from load=<load>-rep=<r>.jsonl.
func parseEventName(name string) (load float64, rep int, err error) {
	rest, ok := strings.CutPrefix(name, "load=")
	rest, ok2 := strings.CutSuffix(rest, ".jsonl")
	i := strings.LastIndex(rest, "-rep=")
	if !ok || !ok2 || i < 0 {
		return 0, 0, fmt.Errorf("not an event file name (load=<load>-rep=<r>.jsonl)")
	}
	if load, err = strconv.ParseFloat(rest[:i], 64); err != nil || !(load > 0) {
		return 0, 0, fmt.Errorf("the load %q is not a positive number", rest[:i])
	}
	if rep, err = strconv.Atoi(rest[i+len("-rep="):]); err != nil || rep < 0 {
		return 0, 0, fmt.Errorf("the replication %q is not a whole number >= 0", rest[i+len("-rep="):])
	}
	return load, rep, nil
}

// SummarizeEvents recomputes every run's summary from a folder of events
// of the sweep sw (sim.Summarize under each replication's configuration:
// sw.Config with the replication's seed), by load.
func SummarizeEvents(sw analysis.Sweep, dir string) (loads []float64, runs [][]sim.Summary, err error) {
	evs, err := ReadEventDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, le := range evs {
		sums := make([]sim.Summary, len(le.Runs))
		for r, recs := range le.Runs {
			cfg := sw.Config
			cfg.Seed = analysis.Seed(sw.BaseSeed, r)
			if sums[r], err = sim.Summarize(cfg, recs); err != nil {
				return nil, nil, fmt.Errorf("report: %s: %w", filepath.Join(dir, EventFileName(le.Load, r)), err)
			}
		}
		loads, runs = append(loads, le.Load), append(runs, sums)
	}
	return loads, runs, nil
}

// CurveFromEvents recomputes the sweep's curve from a folder of its
// events: each run's summary by sim.Summarize, the curve by
// analysis.Sweep.CurveOf. It equals the curve the sweep produced, field for
// field, but for what records cannot give (sim.Summarize's doc: the step
// mix, the replicas' busy time and KV occupancy, the speculation's step
// counts; with sim.Config.KeepTokens off, the ITL distributions and the
// window's tokens) and the model band, whose runs are not observed.
func CurveFromEvents(sw analysis.Sweep, dir string) (*analysis.Curve, error) {
	loads, runs, err := SummarizeEvents(sw, dir)
	if err != nil {
		return nil, err
	}
	return sw.CurveOf(loads, runs)
}
