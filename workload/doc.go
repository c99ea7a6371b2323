// Package workload yields the requests offered to a serving system: arrival
// processes, length distributions and their correlation, prefix reuse,
// multi-turn conversations, and streaming readers of real traces.
//
// Reading guide:
//   - Request is one offered request; Source yields them one at a time.
//   - Feedback is the seam through which a driver tells a closed-loop source
//     that a request ended, so the source can issue the next one.
//
// The package is a leaf: it knows nothing of engines or cost models.
package workload
