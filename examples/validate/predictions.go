package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// predicted is another simulator's per-request prediction of the run,
// read from the file bundle.json's predictions names, and its errors
// against the measured requests, computed as servesim's are.
type predicted struct {
	decl     predictionsDecl
	path     string
	rows     int                // requests predicted
	mape     [3]float64         // TTFT, TPOT, E2E: per-request MAPE, %
	meanDiff [3]float64         // error of the mean, %
	byID     map[int][3]float64 // request index → TTFT, TPOT, E2E, ms (kept for tests)
}

// readPredictions reads predictions in LLMServingSim's outputs/sim.csv
// layout: a header naming at least "request id", "input", "output",
// "latency" and "TTFT" (ns; other columns, such as its per-token ITL
// list, are not read). "request id" N is the run's request N, the N-th
// line of requests.jsonl (vLLM's request_id bench-N); its input and
// output token counts must be the run's. TPOT is (latency − TTFT) /
// (output − 1), as vLLM defines it. A request the file does not predict
// is left out of its MAPE, which then says over how many it is.
func readPredictions(dir string, d predictionsDecl, reqs []request) (*predicted, error) {
	p := &predicted{decl: d, path: filepath.Join(dir, d.file), byID: map[int][3]float64{}}
	f, err := os.Open(p.path)
	if err != nil {
		return nil, fmt.Errorf("%s names predictions.file %q: %w", bundleFile, d.file, err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty: want LLMServingSim's sim.csv columns", p.path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	want := []string{"request id", "input", "output", "latency", "TTFT"}
	idx := make([]int, len(want))
	for i, w := range want {
		if idx[i] = slices.Index(header, w); idx[i] < 0 {
			return nil, fmt.Errorf("%s:1: the header %q has no column %q (want LLMServingSim's sim.csv columns: %q)", p.path, header, w, want)
		}
	}
	var meas, sim [3][]float64
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
		var v [5]int64
		for i := range want {
			if idx[i] >= len(rec) {
				return nil, fmt.Errorf("%s:%d: no %q column in this row", p.path, line, want[i])
			}
			n, err := strconv.ParseInt(rec[idx[i]], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s:%d: %s: %q is not an integer >= 0", p.path, line, want[i], rec[idx[i]])
			}
			v[i] = n
		}
		id := int(v[0])
		switch {
		case id >= len(reqs):
			return nil, fmt.Errorf("%s:%d: request id %d, but the run has %d requests (0 to %d)", p.path, line, id, len(reqs), len(reqs)-1)
		case p.byID[id] != [3]float64{}:
			return nil, fmt.Errorf("%s:%d: request id %d predicted twice", p.path, line, id)
		case int(v[1]) != reqs[id].Input || int(v[2]) != reqs[id].Output:
			return nil, fmt.Errorf("%s:%d: request id %d has %d input and %d output tokens, but the run's request %d (requests.jsonl line %d) has %d and %d",
				p.path, line, id, v[1], v[2], id, id+1, reqs[id].Input, reqs[id].Output)
		case v[4] == 0 || v[3] < v[4]:
			return nil, fmt.Errorf("%s:%d: request id %d: want 0 < TTFT <= latency, got TTFT %d ns, latency %d ns", p.path, line, id, v[4], v[3])
		}
		ttft, e2e := float64(v[4])/1e6, float64(v[3])/1e6
		s := [3]float64{ttft, (e2e - ttft) / float64(v[2]-1), e2e}
		q := reqs[id]
		m := [3]float64{q.ttft(), q.tpot(), q.e2e()}
		p.byID[id] = s
		for k := range 3 {
			meas[k], sim[k] = append(meas[k], m[k]), append(sim[k], s[k])
		}
	}
	p.rows = len(p.byID)
	if p.rows == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", p.path)
	}
	for k := range 3 {
		p.mape[k] = mape(meas[k], sim[k])
		p.meanDiff[k] = 100 * (mean(sim[k])/mean(meas[k]) - 1)
	}
	return p, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// line is the comparison line printed under servesim's own.
func (p *predicted) line(offered int) string {
	over := ""
	if p.rows != offered {
		over = fmt.Sprintf(" over the %d of %d requests it predicts", p.rows, offered)
	}
	return fmt.Sprintf("%s's own prediction of this run (%s)%s: TTFT %.1f %%, TPOT %.2f %%, E2E %.2f %% (means %+.1f %%, %+.1f %%, %+.1f %%)",
		p.decl.simulator, filepath.Base(p.path), over, p.mape[0], p.mape[1], p.mape[2], p.meanDiff[0], p.meanDiff[1], p.meanDiff[2])
}
