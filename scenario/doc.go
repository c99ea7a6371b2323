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
//
// Decoding is strict: an unknown field, an unknown kind, a wrong type, a
// duration without its unit, a field given twice or trailing data is an
// error naming the path, e.g.
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
