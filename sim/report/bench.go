package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// Bench writes a curve in the Go benchmark data format
// (golang.org/design/14313-benchmark-format), one result line per
// replication per offered load, so that benchstat can compare two
// configurations:
//
//	config: chunk=512
//	Unit goodput-req/s better=higher
//	...
//	BenchmarkGoodput/load=2-1	1	1.85 goodput-req/s	0.94 attainment	1.9 throughput-req/s	412 ttft-p99-ms	135 itl-p99-ms
//
// The load is a name key (/load=2), the configuration a configuration
// line, and -1 says a run uses one goroutine. Write A's curve and B's into
// two files and run `benchstat a.txt b.txt`, or both into one with their
// own Config and run `benchstat -col config all.txt`. A figure that is NaN
// (no request completed, so no TTFT p99) is left out of its line. A run
// that measured no request (sim.Summary.NoMeasured) has no goodput,
// attainment or latency to compare — an empty window is no evidence, as in
// analysis.Experiment — so its line carries only the throughput, and benchstat's
// n counts the runs that measured something.
type Bench struct {
	// Name follows "Benchmark" on every line; default "Goodput". It must
	// not contain spaces.
	Name string
	// Config is written as the configuration line "config: Config"
	// before the results; "" writes none. It must not contain a newline.
	Config string
}

// benchUnits are the figures of each line, per run; measured marks the
// figures of the measured requests, which an empty window does not have.
var benchUnits = []struct {
	unit     string
	higher   bool
	measured bool
	of       func(s *sim.Summary) float64
}{
	{"goodput-req/s", true, true, func(s *sim.Summary) float64 { return s.Goodput }},
	{"attainment", true, true, func(s *sim.Summary) float64 { return s.Attainment }},
	{"throughput-req/s", true, false, func(s *sim.Summary) float64 { return s.RequestThroughput }},
	{"ttft-p99-ms", false, true, func(s *sim.Summary) float64 { return s.TTFT.P99 }},
	{"itl-p99-ms", false, true, func(s *sim.Summary) float64 { return s.ITL.P99 }},
}

// Write writes c's lines to w.
func (b Bench) Write(w io.Writer, c *analysis.Curve) error {
	if c == nil {
		return errors.New("report: Bench.Write needs a curve, got nil")
	}
	name := b.Name
	if name == "" {
		name = "Goodput"
	}
	if strings.IndexFunc(name, unicode.IsSpace) >= 0 || strings.ContainsAny(b.Config, "\r\n") {
		return fmt.Errorf("report: Bench.Name %q must have no spaces and Bench.Config %q no newline", name, b.Config)
	}
	bw := bufio.NewWriter(w)
	if b.Config != "" {
		fmt.Fprintf(bw, "config: %s\n", b.Config)
	}
	for _, u := range benchUnits {
		fmt.Fprintf(bw, "Unit %s better=%s\n", u.unit, better(u.higher))
	}
	for _, p := range c.Points {
		for i := range p.Runs {
			bw.WriteString(benchLine(name, p.Load, &p.Runs[i]))
		}
	}
	return bw.Flush()
}

// benchLine is one run's result line.
func benchLine(name string, load float64, s *sim.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Benchmark%s/load=%s-1\t1", name, strconv.FormatFloat(load, 'g', -1, 64))
	for _, u := range benchUnits {
		if u.measured && s.NoMeasured() {
			continue
		}
		if v := u.of(s); !math.IsNaN(v) {
			fmt.Fprintf(&b, "\t%s %s", strconv.FormatFloat(v, 'g', 6, 64), u.unit)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

func better(higher bool) string {
	if higher {
		return "higher"
	}
	return "lower"
}
