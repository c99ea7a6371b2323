// Package chart draws what a sweep found, with gonum.org/v1/plot, as SVG
// or PNG:
//
//   - Goodput: goodput against offered load, the interval as a shaded band
//     and error bars, ok-request throughput, the transport line
//     goodput = offered, the knee with its interval, the peak, the start
//     of collapse and the operating point with its headroom; with a model
//     band (analysis.Curve.Band), the curve under each of its models, lighter,
//     and the knee's model range as a bracket along the foot, an arrow to
//     the edge where a model's knee lies beyond the loads swept.
//   - Latency: TTFT and ITL p50, p90 and p99 against offered load on a log
//     axis, with the SLO's bounds.
//   - CDF: the empirical distribution functions of one run's TTFT and of
//     every inter-token gap, with the SLO's bounds.
//   - Goodputs: several curves' goodput on one axis (a Series each: the
//     routers of a fleet, say), each with its interval and its knee (a
//     line, and a marker in a row of its own along the foot).
//   - PrefixHitRate: the fraction of prompt tokens served from a prefix
//     cache against offered load, per Series: what a prefix-aware router
//     changes in a fleet.
//   - Dial: a dial sweep's knees against the dial's values, with their
//     intervals and paired differences to the baseline, above TTFT p99
//     and ITL p99 at the probe load.
//   - DialKnees: several dial sweeps' knees against the dial's value, one
//     line a series (the draft length K per acceptance α, say), censored
//     knees as open triangles at the edge of the axis they lie beyond,
//     never joined to the line.
//   - Occupancy: one replica's KV occupancy and queue lengths over the
//     time of one run, from the steps a Timeline kept (a
//     sim.StepObserver).
//   - Day: autoscaled runs over time (sim.ScaleSummary's timeline), in
//     panels on one time axis: offered load, replicas, attainment per bin.
//
// Each returns a *plot.Plot, or Panels (plots one above the other, x axes
// aligned), so a caller can retitle it or add to it before writing it with
// Write (an io.Writer and a format, "svg" or "png") or Save (a path whose
// extension names the format). Page sets the size; its zero value is
// 18 × 11 cm at 150 dpi, 8 cm higher for each panel past the first, and
// higher by each legend's strip.
//
// Reading guide: goodput.go and goodput_marks.go (the curve, its marks
// and its model band), latency.go, cdf.go, compare.go (several series on
// one axis), dial.go (a dial sweep), dialknees.go (several), timeline.go
// (Timeline and Occupancy), day.go (an autoscaled day: its bins and
// panels), marks.go (colours, series styles, lines, ticks, the legend's
// strip), panels.go, write.go.
//
// Choices: colours are Okabe–Ito, distinct for colour-blind readers, and
// the series of a comparison differ in glyph and dash pattern too, so
// that series lying on each other, or printed in grey, stay apart; the
// legend sits in a strip between the title and the data, so no line
// crosses it and the axes end near the data (an axis of fractions spans
// 0 to 1); log axes drop figures that are not positive (a log scale
// cannot show them) rather than fail; marks a curve did not find (no
// knee, no collapse) are left out, never guessed.
package chart
