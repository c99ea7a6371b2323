package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/sim/report"
)

// writeCard writes the validation as a benchmark card (JSON): the claim,
// the replayed workload, the replica with the cost model's provenance and
// declared assumptions (report.SystemOf lists them), the build, the
// command, and the comparison in its notes. It has no curve: a single
// replay has neither knee nor peak, and JSON leaves the empty results out.
func writeCard(o options, m measured, r *replayed, c comparison) error {
	unbounded := report.Num(math.NaN())
	card := report.Card{
		Title: "servesim against a real vLLM run, from kernel profiles alone",
		Claim: fmt.Sprintf("Replaying the measured run of %s on %s from kernel profiles alone, with nothing fitted to the run's latencies, servesim predicts its requests with a mean absolute percentage error per request of %.2f %% in E2E, %.2f %% in TPOT and %.1f %% in TTFT.",
			m.meta.Model, r.model.Provenance().GPU, c.e2e.mape, c.tpot.mape, c.ttft.mape),
		Workload: report.CardWorkload{
			Description: fmt.Sprintf("the %d requests of the measured run (%s)", len(m.requests), filepath.Base(m.trace)),
			Arrival:     "the run's own arrival instants (vLLM's queued_ts), " + offeredOver(len(m.requests), m.requests[len(m.requests)-1].Queued-m.requests[0].Queued),
			Lengths:     "the run's own input and output token counts",
			Correlation: "as recorded, request by request",
			Prefix:      prefixNote(m),
			Loop:        "open-loop: timestamp replay",
			Concurrency: "unbounded: every request sent at its instant",
			CacheState:  "empty prefix cache at the start",
			Fingerprint: r.fingerprint,
			Replay:      "timestamp replay (every row at its recorded instant)",
		},
		System:  report.SystemOf(r.cfg),
		SLO:     report.CardSLO{TTFT: unbounded, ITL: unbounded, TPOT: unbounded, E2E: unbounded},
		Build:   report.ReadBuild(),
		Command: "go run ./examples/validate -card " + o.card,
		Notes:   cardNotes(o, m, r, c),
	}
	f, err := os.Create(o.card)
	if err != nil {
		return err
	}
	if err := card.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cardNotes are the comparison and the declared figures, as sentences.
func cardNotes(o options, m measured, r *replayed, c comparison) []string {
	notes := []string{
		"Nothing is fitted to the run's latencies: every step time is composed from the kernel profile of the same GPU, and the measured TTFT, TPOT and E2E are only compared against.",
		fmt.Sprintf("Per-request MAPE: TTFT %.1f %%, TPOT %.2f %%, E2E %.2f %%.", c.ttft.mape, c.tpot.mape, c.e2e.mape),
		"The model band a sweep priced by this profile should carry: " + strings.TrimPrefix(bandLine(c, r), "band for a sweep  ") + ".",
	}
	for _, l := range bandLines(m, r) {
		notes = append(notes, strings.ToUpper(l[:1])+l[1:]+".")
	}
	if p := m.predictions; p != nil {
		notes = append(notes, p.line(len(m.requests))+".")
	}
	if c.notOK > 0 {
		why := failures(o, m, c)
		for i, l := range why {
			why[i] = strings.TrimSpace(l)
		}
		notes = append(notes, fmt.Sprintf("%d of the %d simulated requests did not end ok, or were cut at MaxModelLen, and are left out of the comparison: %s.",
			c.notOK, len(m.requests), strings.TrimSuffix(strings.Join(why, " "), ";")))
	}
	for _, m := range c.metrics() {
		notes = append(notes, fmt.Sprintf("%s (ms), measured / simulated: mean %s / %s, p50 %s / %s, p90 %s / %s, p99 %s / %s.", m.name,
			num(m.measured.mean), num(m.simulated.mean), num(m.measured.p50), num(m.simulated.p50),
			num(m.measured.p90), num(m.simulated.p90), num(m.measured.p99), num(m.simulated.p99)))
	}
	kv := fmt.Sprintf("%d KV blocks of %d tokens, %s", o.kvBlocks, m.meta.Engine.blockSize(), o.kvFrom)
	if o.kvNote != "" {
		kv += " (" + o.kvNote + ")"
	}
	notes = append(notes, fmt.Sprintf("%s. The replay held at most %d at once.", kv, r.peakKV))
	if !m.hashes {
		notes = append(notes, "The bundle has no "+hashFile+": the replay has no prompt hashes and runs without prefix reuse (the run's cache may have found some).")
	}
	notes = append(notes, fmt.Sprintf("Kernels (%s): per layer %s, × %d layers (%s); per step %s; per sequence %s.", r.kernelsFrom,
		strings.Join(r.kernels[0], ", "), r.layers, r.layersFrom, strings.Join(r.kernels[1], ", "), strings.Join(r.kernels[2], ", ")))
	if r.collective != "" {
		notes = append(notes, "Collective: "+r.collective+".")
	}
	notes = append(notes, "Declared by the cost model: "+strings.Join(r.model.Assumptions(), "; ")+".")
	return notes
}

// prefixNote says what the replay's prefix cache could see.
func prefixNote(m measured) string {
	if m.hashes {
		return fmt.Sprintf("the run's prompt block hashes (%s, %d-token blocks), so the prefix cache sees vLLM's reuse", hashFile, m.meta.Engine.blockSize())
	}
	return "none: the bundle has no " + hashFile + ", so the replay runs without prefix reuse"
}
