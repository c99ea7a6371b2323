package costmodel

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
)

// ProfileError is a problem at one place of a profile file: File, Line
// and Column (1-based; Column counts characters, as encoding/csv does)
// name where.
type ProfileError struct {
	File         string
	Line, Column int
	Err          error
}

func (e *ProfileError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
}

func (e *ProfileError) Unwrap() error { return e.Err }

// The files of a profile, as LLMServingSim's profiler writes them.
const (
	DenseFile       = "dense.csv"        // layer,tokens,time_us
	PerSequenceFile = "per_sequence.csv" // layer,sequences,time_us
	AttentionFile   = "attention.csv"    // prefill_chunk,kv_prefill,n_decode,kv_decode,time_us
	SkewFile        = "skew.csv"         // regime,...,t_mean_us,t_max_us,t_skew_us: decodes of two contexts
	MetaFile        = "meta.yaml"        // provenance, architecture, skew fit
)

// ReadProfile reads a kernel profile in LLMServingSim's layout from dir
// in fsys (os.DirFS(".") for the working directory) for tensor-parallel
// degree tp (0 means 1): the CSVs from dir/tp<tp>/ when that directory
// exists (the profiler's own bundle, profiler/perf/<hw>/<model>/<variant>/)
// or else from dir itself, and meta.yaml from dir when it is there.
//
// It fills every Profile field the files give: the curves, the kernels
// of the architecture meta.yaml names (LlamaKernels for "llama"; then a
// profiled kernel that list does not name is an error, as a step would
// leave it out), the skew corrections (fitted per kernel from skew.csv
// when it is there, else meta.yaml's pooled fit for tp), TP and the
// Provenance. Layers is left 0: the profiler times a one-layer copy of
// the model, so the caller declares it. ReadDecoderLayout reads a
// model.json that gives the layer count and kernel lists of any dense
// decoder, and DecoderLayout.Apply declares them on the profile. Every
// error names the file, line and column (*ProfileError).
func ReadProfile(fsys fs.FS, dir string, tp int) (Profile, error) {
	tp = max(tp, 1)
	p := Profile{TP: tp, Provenance: Provenance{Source: dir}}
	csvDir := path.Join(dir, fmt.Sprintf("tp%d", tp))
	if st, err := fs.Stat(fsys, csvDir); err != nil || !st.IsDir() {
		csvDir = dir
	}
	var err error
	if p.Dense, err = readKernels(fsys, path.Join(csvDir, DenseFile), "tokens"); err != nil {
		return p, err
	}
	if p.PerSequence, err = readKernels(fsys, path.Join(csvDir, PerSequenceFile), "sequences"); err != nil {
		return p, err
	}
	if p.Attention, err = readAttention(fsys, path.Join(csvDir, AttentionFile)); err != nil {
		return p, err
	}
	if err := readMeta(fsys, path.Join(dir, MetaFile), &p); err != nil {
		return p, err
	}
	return p, readSkew(fsys, path.Join(csvDir, SkewFile), &p)
}

// readMeta applies meta.yaml to p, if the file is there.
func readMeta(fsys fs.FS, file string, p *Profile) error {
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	meta, err := parseMeta(data, file)
	if err != nil {
		return err
	}
	return meta.apply(p, file)
}

// readSkew fits the skew corrections from skew.csv, if the file is there:
// each row times decodes of two contexts (t_skew_us) against uniform
// decodes at their mean (t_mean_us) and at the longer context
// (t_max_us). α is the least-squares solution of t_skew − t_mean =
// α (t_max − t_mean) over the rows of one kernel: regime "pure" (no
// prefill in the batch) for DecodeSkewAlpha, the others for SkewAlpha;
// rows whose t_max is not above t_mean carry no skew and are left out,
// as the profiler leaves their α blank. Over all rows this is the
// profile's pooled fit (0.0543 for the RTX PRO 6000 at TP 1).
func readSkew(fsys fs.FS, file string, p *Profile) error {
	if _, err := fs.Stat(fsys, file); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	t, closer, err := openTable(fsys, file, "regime", "t_mean_us", "t_max_us", "t_skew_us")
	if err != nil {
		return err
	}
	defer closer()
	var num, den [2]float64 // [pure, varlen]
	rows := [2]int{}
	for {
		rec, ok, err := t.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		var v [3]float64
		for k := range v {
			if v[k], err = t.micros(rec, k+1); err != nil {
				return err
			}
		}
		if v[1] <= v[0] { // the longer context timed no slower: no skew to correct (the profiler leaves α blank)
			continue
		}
		r := 1
		if rec[t.idx[0]] == "pure" {
			r = 0
		}
		num[r] += (v[2] - v[0]) * (v[1] - v[0])
		den[r] += (v[1] - v[0]) * (v[1] - v[0])
		rows[r]++
	}
	fit := func(r int) float64 { return min(1, max(0, num[r]/den[r])) }
	if den[0] > 0 {
		p.DecodeSkewAlpha = fit(0)
	}
	if den[1] > 0 {
		p.SkewAlpha = fit(1)
	}
	p.Provenance.Skew = fmt.Sprintf("least squares over %s: %d pure-decode rows (α %.4g), %d varlen rows (α %.4g)",
		file, rows[0], p.DecodeSkewAlpha, rows[1], p.SkewAlpha)
	return nil
}

// table reads a CSV file whose header names at least the columns want,
// calling row for each record with the record's fields in want's order.
type table struct {
	file string
	r    *csv.Reader
	idx  []int // want[i] is column idx[i]
	want []string
}

func openTable(fsys fs.FS, file string, want ...string) (*table, func() error, error) {
	f, err := fsys.Open(file)
	if err != nil {
		return nil, nil, err
	}
	r := csv.NewReader(f)
	r.ReuseRecord = true
	t := &table{file: file, r: r, want: want}
	header, err := r.Read()
	if err != nil {
		f.Close()
		return nil, nil, t.csvError(err, "reading the header")
	}
	for _, w := range want {
		i := slices.Index(header, w)
		if i < 0 {
			f.Close()
			return nil, nil, &ProfileError{file, 1, 1, fmt.Errorf("the header %q has no column %q", header, w)}
		}
		t.idx = append(t.idx, i)
	}
	return t, f.Close, nil
}

func (t *table) csvError(err error, what string) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ProfileError{t.file, pe.Line, pe.Column, pe.Err}
	}
	if err == io.EOF {
		return &ProfileError{t.file, 1, 1, errors.New("the file is empty")}
	}
	return fmt.Errorf("%s: %s: %w", t.file, what, err)
}

// next reads the next record; ok is false at the end of the file.
func (t *table) next() (rec []string, ok bool, err error) {
	rec, err = t.r.Read()
	if err == io.EOF {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, t.csvError(err, "reading a row")
	}
	return rec, true, nil
}

// at is the error for want[k] of the current record.
func (t *table) at(k int, format string, args ...any) error {
	line, col := t.r.FieldPos(t.idx[k])
	return &ProfileError{t.file, line, col, fmt.Errorf("%s: "+format, append([]any{t.want[k]}, args...)...)}
}

func (t *table) line() int { line, _ := t.r.FieldPos(0); return line }

// count parses want[k] as an integer >= 0.
func (t *table) count(rec []string, k int) (int, error) {
	s := rec[t.idx[k]]
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, t.at(k, "%q is not a count (an integer >= 0)", s)
	}
	return v, nil
}

// micros parses want[k] as a finite time > 0.
func (t *table) micros(rec []string, k int) (float64, error) {
	s := rec[t.idx[k]]
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, t.at(k, "%q is not a time in µs > 0", s)
	}
	return v, nil
}

// readKernels reads layer,<unit>,time_us into a curve per layer name,
// sorted by count; a count timed twice for one name is an error.
func readKernels(fsys fs.FS, file, unit string) (map[string][]KernelPoint, error) {
	t, closer, err := openTable(fsys, file, "layer", unit, "time_us")
	if err != nil {
		return nil, err
	}
	defer closer()
	curves := map[string][]KernelPoint{}
	type key struct {
		name string
		x    int
	}
	lines := map[key]int{}
	for {
		rec, ok, err := t.next()
		if err != nil || !ok {
			if err == nil && len(curves) == 0 {
				err = &ProfileError{file, 1, 1, errors.New("no rows after the header")}
			}
			return sortCurves(curves), err
		}
		name := rec[t.idx[0]]
		if name == "" {
			return nil, t.at(0, "empty kernel name")
		}
		x, err := t.count(rec, 1)
		if err == nil && x == 0 {
			err = t.at(1, "0 is not a count > 0")
		}
		if err != nil {
			return nil, err
		}
		us, err := t.micros(rec, 2)
		if err != nil {
			return nil, err
		}
		if first, dup := lines[key{name, x}]; dup {
			return nil, t.at(1, "%s at %d %s was already timed at line %d", name, x, unit, first)
		}
		lines[key{name, x}] = t.line()
		curves[name] = append(curves[name], KernelPoint{X: x, Us: us})
	}
}

func sortCurves(curves map[string][]KernelPoint) map[string][]KernelPoint {
	for _, c := range curves {
		slices.SortFunc(c, func(a, b KernelPoint) int { return a.X - b.X })
	}
	return curves
}

// readAttention reads the attention grid; a point timed twice is an error.
func readAttention(fsys fs.FS, file string) ([]AttentionPoint, error) {
	t, closer, err := openTable(fsys, file, "prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us")
	if err != nil {
		return nil, err
	}
	defer closer()
	var ps []AttentionPoint
	lines := map[[4]int]int{}
	for {
		rec, ok, err := t.next()
		if err != nil || !ok {
			if err == nil && len(ps) == 0 {
				err = &ProfileError{file, 1, 1, errors.New("no rows after the header")}
			}
			return ps, err
		}
		var c [4]int
		for k := range c {
			if c[k], err = t.count(rec, k); err != nil {
				return nil, err
			}
		}
		us, err := t.micros(rec, 4)
		if err != nil {
			return nil, err
		}
		if err := t.attentionShape(c); err != nil {
			return nil, err
		}
		if first, dup := lines[c]; dup {
			return nil, t.at(0, "the point %v was already timed at line %d", c, first)
		}
		lines[c] = t.line()
		ps = append(ps, AttentionPoint{PrefillChunk: c[0], PrefillContext: c[1], Decodes: c[2], DecodeContext: c[3], Us: us})
	}
}

// attentionShape refuses a row that times nothing or gives context to
// tokens it does not have.
func (t *table) attentionShape(c [4]int) error {
	switch {
	case c[0] == 0 && c[2] == 0:
		return t.at(0, "the row times an empty batch (no prefill chunk, no decode)")
	case c[0] == 0 && c[1] > 0:
		return t.at(1, "%d tokens of prefill context without a prefill chunk", c[1])
	case c[2] == 0 && c[3] > 0:
		return t.at(3, "%d tokens of decode context without decodes", c[3])
	}
	return nil
}
