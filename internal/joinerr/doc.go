// Package joinerr joins the errors of runs that fail alike: a sweep's
// replications of one load (sim/analysis) and a shard's runs (sim/shard)
// often fail with one message, which a reader needs once, with how many
// runs failed so.
//
// Reading guide: joinerr.go holds Distinct.
package joinerr
