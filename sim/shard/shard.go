package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/servesim/servesim/internal/joinerr"
	"github.com/servesim/servesim/sim"
)

// ID names one part of a study split Count ways (Index in [0, Count)): one
// pod of a Kubernetes Indexed Job (JOB_COMPLETION_INDEX), one task of any
// array job. The study's runs are numbered in the order the unsharded
// study runs them, and run j belongs to shard j mod Count: strided, so that
// every shard gets its share of the heavy high loads.
type ID struct {
	Index, Count int
}

// Validate refuses a count below 1 and an index outside [0, Count).
func (sh ID) Validate() error {
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return fmt.Errorf("shard: ID must have Count >= 1 and Index in [0, Count), got Index %d, Count %d", sh.Index, sh.Count)
	}
	return nil
}

func (sh ID) String() string { return fmt.Sprintf("shard %d of %d", sh.Index, sh.Count) }

// owns reports whether run j of a study belongs to the shard.
func (sh ID) owns(j int) bool { return j%sh.Count == sh.Index }

// Errors a sharded study's caller may branch on.
var (
	// ErrAutomaticGrid: a sweep with an automatic grid (Grid.Start) cannot
	// be sharded, since it chooses each load from the results at the loads
	// before it, which the shards run apart. Shard a sweep over explicit
	// Grid.Loads (say the loads an automatic sweep chose on one machine
	// with few replications).
	ErrAutomaticGrid = errors.New("shard: a sharded sweep needs explicit Grid.Loads: an automatic grid (Grid.Start) chooses each load from the results at the loads before it, which the shards run apart")
	// ErrSet: the results given to a merge are not exactly the shards of
	// this study (one missing or given twice, another study's, another
	// split's, or a file that is no shard file).
	ErrSet = errors.New("shard: the results are not the shards of this study")
)

// Result is one shard's part of a study: which study (its kind and the
// fingerprint of its configuration), which shard, and the outcome of every
// run the shard owns. Write it with WriteFile (or Write); the study's merge
// (Merge, MergeDial, MergeExperiment) reads every shard's and builds the
// result of the unsharded run, byte for byte.
type Result struct {
	Kind  string // the study's type: "analysis.Sweep", "analysis.DialSweep" or "analysis.Experiment"
	Study string // the fingerprint of its configuration (studyFingerprint), "sha256:…"
	Shard ID
	Runs  int // runs in the whole study, over every shard
	// Build is the simulator that ran the shard: the VCS revision it was
	// built from ("-dirty" when modified) or its module version; "" when
	// the binary does not say (go run, go test). A merge refuses shards of
	// another build when both say theirs.
	Build string

	runs []outcome // the runs the shard owns, in run order
	file string    // where it was read from ("" for one made in memory)
}

// outcome is the outcome of one run of a study: a sweep's summary, or an
// experiment block's figures (metric of A, of B, attainment of A, of B,
// then the latency readout of A, of B: analysis.Block's fields in order).
type outcome struct {
	job     int
	summary sim.Summary
	figures [10]float64
}

// Owned is the number of runs the shard holds.
func (r *Result) Owned() int { return len(r.runs) }

// name says which shard r is, and its file when it was read from one.
func (r *Result) name() string {
	if r.file == "" {
		return r.Shard.String()
	}
	return fmt.Sprintf("%s (%s)", r.file, r.Shard)
}

// newResult is the empty result of shard sh of a study.
func newResult(kind, study string, sh ID, runs int) *Result {
	return &Result{Kind: kind, Study: study, Shard: sh, Runs: runs, Build: build()}
}

// build names the running binary's build: its VCS revision, or its module
// version; "" when it carries neither.
var build = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	switch {
	case rev != "":
		return rev + dirty
	case info.Main.Version != "" && info.Main.Version != "(devel)":
		return info.Main.Path + "@" + info.Main.Version
	}
	return ""
})

// runOwned runs the runs of res's study that its shard owns, on workers
// goroutines, run(j) giving the outcome of run j.
func runOwned(res *Result, workers int, run func(j int) (outcome, error)) error {
	if err := res.Shard.Validate(); err != nil {
		return err
	}
	var jobs []int
	for j := range res.Runs {
		if res.Shard.owns(j) {
			jobs = append(jobs, j)
		}
	}
	res.runs = make([]outcome, len(jobs))
	errs := make([]error, len(jobs))
	// The last runs first: a study numbers its runs load by load, the
	// highest (longest) last, and these should not be what the workers
	// finish on (analysis.Sweep.Run hands its runs out so too). Each outcome
	// goes to its own place.
	parallel(workers, len(jobs), func(k int) {
		i := len(jobs) - 1 - k
		res.runs[i], errs[i] = run(jobs[i])
		res.runs[i].job = jobs[i]
	})
	if err := joinerr.Distinct(errs); err != nil {
		return fmt.Errorf("shard: %s of a %s: %w", res.Shard, res.Kind, err)
	}
	return nil
}

// mergeRuns checks that parts are exactly the shards of one study of the
// given kind, fingerprint and number of runs, each holding the runs it
// owns, and returns every run in run order. Each problem names the shard
// and its file.
func mergeRuns(kind, study string, runs int, parts []*Result) ([]outcome, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: there are none", ErrSet)
	}
	n := parts[0].Shard.Count
	byIndex := map[int]*Result{} // not a slice of n: n comes from a file
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, p := range parts {
		switch {
		case p.Kind != kind:
			bad("%s is of a %s, not a %s", p.name(), p.Kind, kind)
		case p.Study != study:
			bad("%s is of another study (%s; this one is %s)", p.name(), p.Study, study)
		case p.Shard.Count != n:
			bad("%s is of a split into %d shards, %s of one into %d", p.name(), p.Shard.Count, parts[0].name(), n)
		case p.Shard.Validate() != nil:
			bad("%s: %v", p.name(), p.Shard.Validate())
		case p.Runs != runs:
			bad("%s counts %d runs in the study, this one has %d: it was planned by another version of the simulator", p.name(), p.Runs, runs)
		case p.Build != "" && build() != "" && p.Build != build():
			bad("%s was run by build %s, this merge is build %s: another simulator may give other runs", p.name(), p.Build, build())
		case byIndex[p.Shard.Index] != nil:
			bad("%s appears twice: %s and %s", p.Shard, byIndex[p.Shard.Index].name(), p.name())
		default:
			byIndex[p.Shard.Index] = p
		}
	}
	if len(errs) == 0 {
		missing(byIndex, n, bad)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrSet, errors.Join(errs...))
	}
	out := make([]outcome, runs)
	for i := range n {
		if err := byIndex[i].place(out); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSet, err)
		}
	}
	return out, nil
}

// missing names the first few of the n shards not in byIndex, and how
// many more there are.
func missing(byIndex map[int]*Result, n int, bad func(string, ...any)) {
	const named = 5
	count := n - len(byIndex)
	for i, k := 0, 0; i < n && k < min(count, named); i++ {
		if byIndex[i] == nil {
			bad("%s is missing (its file would be %s)", ID{i, n}, FileName(ID{i, n}))
			k++
		}
	}
	if count > named {
		bad("%d more of the %d shards are missing", count-named, n)
	}
}

// place puts the shard's runs at their places in out, checking that it
// holds exactly the runs it owns.
func (r *Result) place(out []outcome) error {
	want := 0 // the next run the shard owns
	for want < len(out) && !r.Shard.owns(want) {
		want++
	}
	for _, run := range r.runs {
		if run.job != want {
			return fmt.Errorf("%s holds run %d where run %d was due (it owns runs %d, %d+%d, …)", r.name(), run.job, want, r.Shard.Index, r.Shard.Index, r.Shard.Count)
		}
		out[run.job] = run
		want += r.Shard.Count
	}
	if want < len(out) {
		return fmt.Errorf("%s stops before run %d of the %d it owns", r.name(), want, len(out))
	}
	return nil
}

// FileName is shard sh's file name in a directory of shard files, e.g.
// "shard-07-of-20.simshard" (the index padded to sort in order).
func FileName(sh ID) string {
	return fmt.Sprintf("shard-%0*d-of-%d.simshard", len(fmt.Sprint(max(sh.Count-1, 0))), sh.Index, sh.Count)
}

// WriteFile writes r to dir as FileName(r.Shard) and returns its
// path. The file appears whole or not at all: it is written under a
// temporary name and renamed, so that a merge never reads the half of a
// file whose writer was killed.
func WriteFile(dir string, r *Result) (string, error) {
	f, err := os.CreateTemp(dir, ".shard-*.tmp")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, FileName(r.Shard))
	err = errors.Join(r.Write(f), f.Chmod(0o644), f.Close()) // readable by the merge, as os.Create's would be
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("shard: writing %s: %w", path, err)
	}
	return path, nil
}

// ReadFile reads a shard file; the result remembers the file, and a
// merge names it.
func ReadFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("shard: %s: %w", path, err)
	}
	r.file = path
	return r, nil
}

// ReadDir reads every shard file (*.simshard) in dir, in name order.
// Leave only one study's shards in a directory: another study's, or
// another split's, makes the merge fail naming it.
func ReadDir(dir string) ([]*Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".simshard") {
			continue
		}
		r, err := ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no *.simshard file in %s", ErrSet, dir)
	}
	slices.SortFunc(out, func(a, b *Result) int { return strings.Compare(a.file, b.file) })
	return out, nil
}
