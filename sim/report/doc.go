// Package report writes what a simulation produced: per-request events,
// summaries, benchmark cards and Go benchmark lines.
package report
