package scenario

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// Scenario is one study stored as a file: what runs, named, with the
// claim it tests and what to write. Exactly one of Sweep, Experiment,
// DialSweep, Replay and Study is set. `go run ./examples/run -config
// file.json` runs it and writes the report, charts, card and events.
type Scenario struct {
	// Name names the study and its output files (a word: letters,
	// digits, '-', '_' and '.'); "" means "scenario".
	Name string
	// Title heads the report and the card; "" means the Name.
	Title string
	// Claim is the falsifiable claim, declared before the runs, for a
	// sweep, a dial sweep or a replay (an experiment's is its
	// Hypothesis.Claim; a study's are its experiments').
	Claim string
	// Operating is, for a sweep, the operating load whose headroom to the
	// knee is reported (in the sweep's load unit); 0 means none.
	Operating float64

	Sweep      *analysis.Sweep
	Experiment *analysis.Experiment
	DialSweep  *analysis.DialSweep
	Replay     *TraceReplay
	Study      *Study

	Output Output
}

// TraceReplay is one run of a configuration over a recorded trace, at the
// trace's own instants (transformed as Trace.Transform says).
type TraceReplay struct {
	Config sim.Config
	// Path is the trace file; a relative path is read from the directory
	// the program runs in.
	Path  string
	Trace workload.TraceConfig
}

// Study is several sweeps and A/B experiments that answer one question
// together, in groups (the routing question has a group per prefix
// reuse level: a sweep per router, and PrefixAffinity against each
// baseline). Groups run side by side; within a group the sweeps run
// first, then the experiments, whose loads may come from a sweep's knee.
type Study struct {
	Groups []Group
}

// Group is one setting of a study: its sweeps and the experiments that
// compare its configurations.
type Group struct {
	Name        string // e.g. "low-reuse"; unique in the study
	Sweeps      []NamedSweep
	Experiments []Comparison
}

// NamedSweep is a sweep under the name the report gives it (a router's,
// a configuration's).
type NamedSweep struct {
	Name  string // unique in the group
	Sweep analysis.Sweep
}

// Comparison is an A/B experiment of a group, A and B named as the report
// says them (usually the names of the group's sweeps of the same
// configurations).
type Comparison struct {
	A, B       string
	Experiment analysis.Experiment
	// Operating, when set, chooses the experiment's loads once the
	// group's sweeps have run: multiples of a sweep's knee. The
	// experiment's own Loads are then left empty.
	Operating *Operating
}

// Operating sets an experiment's loads from a sweep's knee, read before
// any A/B run: Factors × the knee of the group's sweep named Sweep. A
// sweep without a knee gives no loads, and the experiment does not run.
// When the experiment declares a model band and that sweep ran one too,
// each model of the band runs at Factors × the sweep's knee under that
// model (analysis.BandLoads, Experiment.BandLoads): a model that moves
// the knee past the span of the nominal loads leaves no knee to compare
// there.
type Operating struct {
	Sweep   string
	Factors []float64
}

// Output says what to write: the text report always goes to the
// program's output; Write lists the files written into Dir.
type Output struct {
	// Dir is the directory of the files; "" means out/<Name>.
	Dir string
	// Write lists the outputs, of "report" (the text report as
	// report.txt), "charts" (PNG and SVG), "card" (JSON and Markdown)
	// and "events" (each sweep run's per-request records as JSON Lines,
	// events/load=<load>-rep=<r>.jsonl, under events/<group>/<sweep>/ in
	// a study of several sweeps; a replay's as <name>-events.jsonl; an
	// experiment's and a dial sweep's runs are not observed). nil means
	// all four; an empty list writes no file.
	Write []string
}

// The outputs Output.Write may list.
const (
	WriteReport = "report"
	WriteCharts = "charts"
	WriteCard   = "card"
	WriteEvents = "events"
)

var outputs = []string{WriteReport, WriteCharts, WriteCard, WriteEvents}

// Writes reports whether the scenario writes output w.
func (o Output) Writes(w string) bool { return o.Write == nil || slices.Contains(o.Write, w) }

// DefaultName is the Name of a scenario that gives none.
const DefaultName = "scenario"

// NameOrDefault is the scenario's Name, or DefaultName.
func (s Scenario) NameOrDefault() string {
	if s.Name == "" {
		return DefaultName
	}
	return s.Name
}

// Dir is the directory the scenario writes into.
func (s Scenario) Dir() string {
	if s.Output.Dir == "" {
		return "out/" + s.NameOrDefault()
	}
	return s.Output.Dir
}

// Kind says what the scenario runs: "sweep", "experiment", "dial sweep",
// "replay" or "study" ("" when none or several are set).
func (s Scenario) Kind() string {
	kinds := s.kinds()
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

func (s Scenario) kinds() []string {
	var out []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"sweep", s.Sweep != nil}, {"experiment", s.Experiment != nil}, {"dial sweep", s.DialSweep != nil},
		{"replay", s.Replay != nil}, {"study", s.Study != nil}} {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

// Validate joins every problem of the scenario, each naming its field:
// exactly one thing to run, a usable name, known outputs, and the
// configuration's own Validate (analysis.Sweep's, analysis.Experiment's, …) under
// the field that holds it.
func (s Scenario) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("scenario: "+format, a...)) }
	under := func(field string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("scenario: %s: %w", field, err))
		}
	}
	if s.Name != "" && !isWord(s.Name) {
		bad("Name %q must be a word (letters, digits, '-', '_', '.'): it names the output files", s.Name)
	}
	switch k := s.kinds(); len(k) {
	case 0:
		bad("a scenario needs one of Sweep, Experiment, DialSweep, Replay or Study")
	case 1:
	default:
		bad("a scenario holds one of Sweep, Experiment, DialSweep, Replay or Study, got %s", strings.Join(k, ", "))
	}
	if s.Sweep != nil {
		under("Sweep", s.Sweep.Validate())
	}
	if !(s.Operating >= 0) || math.IsInf(s.Operating, 0) || s.Operating > 0 && s.Sweep == nil {
		bad("Operating must be a load >= 0 of a sweep (0: none), got %v", s.Operating)
	}
	if s.Experiment != nil {
		under("Experiment", s.Experiment.Validate())
	}
	if s.DialSweep != nil {
		under("DialSweep", s.DialSweep.Validate())
	}
	if s.Replay != nil {
		under("Replay", s.Replay.validate())
	}
	if s.Study != nil {
		under("Study", s.Study.validate())
	}
	for i, w := range s.Output.Write {
		if !slices.Contains(outputs, w) {
			bad("Output.Write[%d] is %q, not one of %s", i, w, strings.Join(outputs, ", "))
		}
	}
	return errors.Join(errs...)
}

func isWord(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != "" && s != "." && s != ".."
}

func (r *TraceReplay) validate() error {
	errs := []error{r.Config.Validate()}
	if r.Path == "" {
		errs = append(errs, errors.New("Path is empty: a replay needs its trace file"))
	}
	return errors.Join(errs...)
}

func (s *Study) validate() error {
	var errs []error
	if len(s.Groups) == 0 {
		errs = append(errs, errors.New("Groups is empty: a study needs at least one group"))
	}
	seen := map[string]int{}
	for i, g := range s.Groups {
		if j, dup := seen[g.Name]; dup {
			errs = append(errs, fmt.Errorf("Groups[%d].Name %q is also Groups[%d]'s", i, g.Name, j))
		}
		seen[g.Name] = i
		if err := g.validate(); err != nil {
			errs = append(errs, fmt.Errorf("Groups[%d] (%q): %w", i, g.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (g *Group) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if g.Name == "" {
		bad("Name is empty")
	}
	if len(g.Sweeps) == 0 && len(g.Experiments) == 0 {
		bad("a group needs a sweep or an experiment")
	}
	names := map[string]int{}
	for i, s := range g.Sweeps {
		if s.Name == "" {
			bad("Sweeps[%d].Name is empty", i)
		}
		if j, dup := names[s.Name]; dup {
			bad("Sweeps[%d].Name %q is also Sweeps[%d]'s", i, s.Name, j)
		}
		names[s.Name] = i
		if err := s.Sweep.Validate(); err != nil {
			bad("Sweeps[%d] (%q).Sweep: %w", i, s.Name, err)
		}
	}
	for i, c := range g.Experiments {
		if err := c.validate(names); err != nil {
			bad("Experiments[%d]: %w", i, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Comparison) validate(sweeps map[string]int) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.A == "" || c.B == "" {
		bad("A and B name the configurations compared, got %q and %q", c.A, c.B)
	}
	x := c.Experiment
	if o := c.Operating; o != nil {
		if _, ok := sweeps[o.Sweep]; !ok {
			bad("Operating.Sweep %q is not one of the group's sweeps", o.Sweep)
		}
		if len(o.Factors) == 0 {
			bad("Operating.Factors is empty")
		}
		for i, f := range o.Factors {
			if !(f > 0) || math.IsInf(f, 0) {
				bad("Operating.Factors[%d] must be a positive multiple of the knee, got %v", i, f)
			}
		}
		if len(x.Loads) > 0 {
			bad("Experiment.Loads must be empty with Operating: the loads come from the knee")
		}
		x.Loads = []float64{1} // stands for the loads to come: one a factor
		for range len(o.Factors) - 1 {
			x.Loads = append(x.Loads, 1)
		}
	}
	if err := x.Validate(); err != nil {
		bad("Experiment: %w", err)
	}
	return errors.Join(errs...)
}

// Load reads a scenario file with the built-in kinds (Default) and
// validates it. Every error names the file and the field.
func Load(path string) (Scenario, error) { return Default().Load(path) }

// Load reads a scenario file with r's kinds and validates it.
func (r *Registry) Load(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	s, err := r.Parse(b)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse decodes and validates a scenario.
func (r *Registry) Parse(data []byte) (Scenario, error) {
	var s Scenario
	if err := r.Unmarshal(data, &s); err != nil {
		return Scenario{}, err
	}
	if err := s.Validate(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// Save validates s and writes it to path with the built-in kinds.
func Save(path string, s Scenario) error { return Default().Save(path, s) }

// Save validates s and writes it to path with r's kinds.
func (r *Registry) Save(path string, s Scenario) error {
	if err := s.Validate(); err != nil {
		return err
	}
	b, err := r.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
