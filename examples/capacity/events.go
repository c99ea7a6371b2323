package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/report"
)

// eventFiles writes every run's per-request records as JSON Lines, one file
// per (load, replication), so that the card's figures can be re-analysed.
type eventFiles struct {
	dir   string
	mu    sync.Mutex
	files []*os.File
	lines []*report.EventJSONL
	err   error
}

// eventPattern matches the names of the files eventFiles writes, and no
// other: the only files in the directory it removes.
const eventPattern = "load=*-rep=*.jsonl"

// newEventFiles makes dir and removes the event files of earlier runs from
// it, so that it holds only this run's (a sweep of other loads or fewer
// replications would leave stale files beside them). Other files are left
// alone.
func newEventFiles(dir string) (*eventFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stale, err := filepath.Glob(filepath.Join(dir, eventPattern))
	if err != nil {
		return nil, err
	}
	for _, path := range stale {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing an earlier run's events: %w", err)
		}
	}
	return &eventFiles{dir: dir}, nil
}

// observe opens the file of one run; runs call it in parallel.
func (e *eventFiles) observe(load float64, rep int) sim.Observer {
	path := filepath.Join(e.dir, fmt.Sprintf("load=%.4g-rep=%d.jsonl", load, rep))
	f, err := os.Create(path)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.err = errors.Join(e.err, err)
		return nil
	}
	j := report.NewEventJSONL(f)
	e.files = append(e.files, f)
	e.lines = append(e.lines, j)
	return j
}

// close flushes and closes every file and returns the first problem.
func (e *eventFiles) close() error {
	err := e.err
	for i, f := range e.files {
		err = errors.Join(err, e.lines[i].Flush(), f.Close())
	}
	return err
}
