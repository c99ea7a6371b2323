// Package scenario stores servesim configurations as data: every config
// type (sim.Config, engine.Config, the cost models, the workload
// specifications, routers, SLOs and classes, sweeps and experiments)
// encodes to JSON and decodes back to the same value, so a scenario can be
// saved, shared, diffed and rerun by someone who does not write Go.
//
// Reading guide:
//   - registry.go: Registry, the named kinds of every interface-typed
//     field, and Register, which adds a kind of your own in your code
//     (nothing registers itself at init).
//   - builtins.go: Default, the registry of the built-in kinds.
//   - codec.go: Marshal and Unmarshal, and the encoding's rules: Go field
//     names, zero fields left out (so the documented zero value of every
//     config is {}), durations as strings with their unit ("45ms"),
//     interface values as {"kind": …, fields…}, functions refused.
//   - scenario.go: Scenario, a study stored as a file: one of a sweep, an
//     A/B experiment, a dial sweep, a replay of a trace (a sim.Config, the
//     trace's path and its workload.TraceConfig) or a Study (groups of
//     named sweeps and comparisons whose loads may be multiples of a
//     sweep's knee: the routing question), with a name, a claim, an
//     operating load and its outputs (Output: the directory, and which of
//     report, charts, card and events). Load and Save read and write a
//     file and validate it: Validate checks what the decoder cannot
//     (exactly one thing to run, the names, the outputs) and runs the
//     configuration's own Validate under the field that holds it, so
//     every error names the file and the field ("atlas.json: scenario:
//     Sweep: sim: Sweep.Grid needs Loads or a positive Start").
//   - card.go: a benchmark card (sim/report's Card) embeds its scenario
//     (CardScenario, which says instead why a scenario cannot be rerun:
//     "cannot be rerun: Sweep.Workload is a function (analysis.WorkloadFunc)");
//     LoadCard reads it back, a runnable Scenario. Rerunning it (`go run
//     ./examples/run -config card.json`) writes the same card, byte for
//     byte, when the simulator did not change. A card analysed under
//     another analysis revision (analysis.AnalysisRevision, a hash of the
//     analysis sources) is refused (ErrRevision) unless
//     CardOptions.AnyRevision, and a card without its scenario says why
//     (ErrNotRerunnable).
//
// go run ./examples/run -config file.json runs any scenario and writes the
// report, charts, card and events; examples/run/scenarios holds the Atlas
// capacity sweep and the routing question as files.
//
// Decoding is strict: an unknown field, an unknown kind, a wrong type, a
// duration without its unit, a field given twice or trailing data is an
// error naming the path (a leading UTF-8 byte order mark is skipped, as
// the trace readers skip one), e.g.
//
//	scenario: sim.Config.Engine.ChunkCapp: unknown field of engine.Config
//	scenario: sim.Config.Model: costmodel.Model kind "Foo" is not registered (registered: drafting, frozen, …)
//
// Values are not validated here: a decoded config's Validate says what is
// wrong with it, naming the field, as for a config built in Go.
//
// Why JSON and the standard library: a scenario is a small tree of
// numbers, names and durations; encoding/json reads and writes it
// exactly, and YAML would add a dependency for comments alone.
package scenario
