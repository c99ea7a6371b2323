// Package chart draws what a sweep found, with gonum.org/v1/plot, as SVG
// or PNG:
//
//   - Goodput: goodput against offered load, the interval as a shaded band
//     and error bars, ok-request throughput, the transport line
//     goodput = offered, the knee with its interval, the peak, the start
//     of collapse and the operating point with its headroom.
//   - Latency: TTFT and ITL p50, p90 and p99 against offered load on a log
//     axis, with the SLO's bounds.
//   - CDF: the empirical distribution functions of one run's TTFT and of
//     every inter-token gap, with the SLO's bounds.
//   - Goodputs: several curves' goodput on one axis (a Series each: the
//     routers of a fleet, say), each with its interval and its knee.
//   - PrefixHitRate: the fraction of prompt tokens served from a prefix
//     cache against offered load, per Series: what a prefix-aware router
//     changes in a fleet.
//   - Dial: a dial sweep's knees against the dial's values, with their
//     intervals and paired differences to the baseline, above TTFT p99
//     and ITL p99 at the probe load.
//   - DialKnees: several dial sweeps' knees against the dial's value, one
//     line a series (the draft length K per acceptance α, say), censored
//     knees as triangles at the bound they lie beyond.
//   - Occupancy: one replica's KV occupancy and queue lengths over the
//     time of one run, from the steps a Timeline kept (a
//     sim.StepObserver).
//
// Each returns a *plot.Plot, or Panels (plots one above the other, x axes
// aligned), so a caller can retitle it or add to it before writing it with
// Write (an io.Writer and a format, "svg" or "png") or Save (a path whose
// extension names the format). Page sets the size; its zero value is
// 18 × 11 cm at 150 dpi, 8 cm higher for each panel past the first.
//
// Reading guide: goodput.go and goodput_marks.go (the curve and its marks),
// latency.go, cdf.go, compare.go (several series on one axis), dial.go
// (a dial sweep), dialknees.go (several), timeline.go (Timeline and
// Occupancy), marks.go
// (colours, lines, ticks), panels.go, write.go.
//
// Choices: colours are Okabe–Ito, distinct for colour-blind readers; the
// legend sits in a band the marks leave free, so no line crosses it; log
// axes drop figures that are not positive (a log scale cannot show them)
// rather than fail; marks a curve did not find (no knee, no collapse) are
// left out, never guessed.
package chart
