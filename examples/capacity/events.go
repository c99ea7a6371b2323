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
	lines []*report.JSONL
	err   error
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
	j := report.NewJSONL(f)
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
