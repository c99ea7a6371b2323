// Package blis reads and writes BLIS's TraceV2 traces (BLIS,
// inference-sim/inference-sim: a YAML header and a CSV of requests), so
// that servesim and BLIS can be run on the same requests.
//
// # Reading guide
//
//   - read.go: OpenTrace / NewTrace replay a BLIS run's trace (TraceV2) as blis
//     replay does, an open-loop workload.Source at its recorded µs
//     instants, prefix groups becoming shared hash ids; Options says
//     whether to sort rows written in completion order (blis observe)
//     and whether to accept an implausible rate.
//   - write.go, groups.go: CreateTrace / WriteTrace write requests BLIS
//     can replay, with servesim's own trailing columns so they read back
//     identical; Written says what TraceV2 could not hold (a request's
//     one prefix group: groups.go).
//   - header.go, header_write.go: Header (with Server and SLOTarget), the
//     TraceV2 header; ReadHeader reads it, refusing a header that is empty
//     or not of trace_version 2 or 3.
//   - yamlsubset.go: the small parser of the YAML subset BLIS writes, which
//     refuses, with its line, what it does not take.
//
// Rows are read with workload.CSVRows and errors are the trace readers':
// a malformed line is a *workload.ParseError naming the file, line and
// field (wrapping workload.ErrMalformed, or workload.ErrUnsorted for an
// arrival going back), a replay of no rows wraps workload.ErrEmptyTrace,
// and one whose implied rate is implausible wraps
// workload.ErrImplausibleRate. The mapping of BLIS's configuration onto
// servesim's is in docs/other-simulators.md; the names these had in
// package workload are in docs/migrating.md.
//
// The package imports workload and nothing else of servesim; workload
// does not import it.
package blis
