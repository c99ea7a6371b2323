package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/sim/chart"
)

// writeChart draws the knee against K, one line per α, as PNG and SVG
// into o.out, and lists the files on w.
func writeChart(w io.Writer, studies []study, o options) error {
	series := make([]chart.DialSeries, len(studies))
	for i, s := range studies {
		series[i] = chart.DialSeries{Name: fmt.Sprintf("α = %g", s.alpha), Result: s.result}
	}
	title := fmt.Sprintf("Atlas TP4, 2000/200 tokens: knee against K, %s", o.drafter.short())
	p, err := chart.DialKnees(title, series...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(o.out, "specdecode-knee"+ext)
		if err := chart.Save(path, p); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	return nil
}
