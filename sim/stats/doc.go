// Package stats holds the statistics of plain values that package sim
// summarises runs with and package sim/analysis draws curves and verdicts
// with: a latency's Dist and its percentile Methods, the Sketch a summary
// moves a latency to past its exact samples, confidence Intervals
// (Student-t across replications, stratified bootstrap for percentiles)
// and MSER-5 warm-up truncation. It knows nothing of runs, records or
// requests: every function takes values (milliseconds, durations,
// replications' figures) and returns figures, so it imports nothing of
// servesim's.
//
// Reading guide:
//   - dist.go: Dist (N, mean, population std, median, p90, p95, p99, max
//     and the relative error of a sketched one) and DistOf, a sorted
//     sample's.
//   - quantile.go: the percentile Methods, LinearInterpolation (numpy's
//     default, which vLLM's bench serve uses) and InvertedCDF (numpy's
//     "inverted_cdf"), over a sorted sample
//     (Method.Quantile) or distinct values with cumulative counts
//     (Method.QuantileCounts).
//   - sketch.go, sketchlog.go: Sketch, the mergeable relative-error
//     quantile sketch (DDSketch) of accuracy SketchAccuracy, and the
//     table its bucket index reads a logarithm from.
//   - sortdur.go: SortDurations, the radix sort of latencies as durations
//     a summary sorts its exact samples with, and SortDurationsMS, which
//     writes their milliseconds in its last pass.
//   - interval.go: Interval, a figure with its confidence interval;
//     MeanInterval (Student-t), QuantileIntervals (the stratified
//     percentile bootstrap over replications' sorted samples),
//     BootstrapStream, the stream it draws from, and Clamp.
//   - mser.go: MSER5, White's MSER-5 truncation rule.
//   - revision.go: the files of this package the analysis revision
//     (analysis.AnalysisRevision) hashes.
package stats
