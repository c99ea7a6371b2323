package analysis

import (
	"fmt"
	"slices"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// banded is a cost model that declares a figure it did not measure and
// the band that figure needs (costmodel.ProfileModel with a declared
// collective: CollectiveBand).
type banded interface {
	CollectiveBand() []costmodel.NamedModel
}

// checkDeclared refuses a configuration whose replicas run a cost model
// with a declared figure (a tensor-parallel collective priced from a
// declared bandwidth and latency, not from an nccl-tests curve) unless m
// runs that figure's band: each model of its CollectiveBand among
// m.Shapes, by name. A declared collective is accepted only with a band
// wide enough to cover a spec sheet against a measurement, never
// silently (issue 36: on a Qwen3-32B TP 2 run a spec-sheet figure was
// 26 % off in E2E).
func (m ModelError) checkDeclared(cfg sim.Config) error {
	for _, model := range replicaModels(cfg) {
		b, ok := model.(banded)
		if !ok {
			continue
		}
		for _, alt := range b.CollectiveBand() {
			if !slices.ContainsFunc(m.Shapes, func(s costmodel.NamedModel) bool { return s.Name == alt.Name }) {
				return fmt.Errorf("sim: ModelError.Shapes: the replicas' cost model prices its all-reduces from a declared figure (%s), not a measured one; a declared figure needs its band: add the model's CollectiveBand() (%q) to ModelError.Shapes, or measure the collective with nccl-tests (costmodel.Collective.Measured)",
					modelName(model), alt.Name)
			}
		}
	}
	return nil
}

// replicaModels are the cost models cfg's replicas run: the fleet's, or
// the single replica's.
func replicaModels(cfg sim.Config) []costmodel.Model {
	var models []costmodel.Model
	if cfg.Fleet.Replicas == nil {
		models = append(models, cfg.Model)
	}
	for _, r := range cfg.Fleet.Replicas {
		models = append(models, r.Model)
	}
	for _, r := range cfg.Fleet.Prefill.Replicas { // a disaggregated fleet's prefill pool
		models = append(models, r.Model)
	}
	return models
}
