package report

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
)

// Setting is one configuration field and its value as %v prints it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// System is the simulated replica's configuration: the engine's scheduler
// fields, the cost model and its fields, and the run's own settings, each
// at the value that ran (documented defaults filled in).
//
// A fleet (several replicas, or a router or signal delay set) adds Fleet:
// the replicas, the router and its settings, the signal delay. Engine and
// Model are then each replica's when all are configured alike, and empty
// when they differ, each configuration being in Fleet.Groups. A single
// replica has no Fleet, and its card reads as it did before fleets.
type System struct {
	Engine     []Setting `json:"engine"`
	Model      string    `json:"cost_model"` // the model's Go type
	ModelSetup []Setting `json:"cost_model_settings"`
	// Speculation is the replica's speculative decoding
	// (sim.Speculation.String: K, the acceptance, the drafter); "" without
	// any, or in a fleet whose replicas differ (Fleet.Groups has each).
	Speculation string     `json:"speculation,omitempty"`
	Run         []Setting  `json:"run"`
	Fleet       *CardFleet `json:"fleet,omitempty"`
}

// maxValue caps a setting's printed value (a measured step table can be
// long); longer values end in "…".
const maxValue = 120

// SystemOf renders cfg's engine, cost model and run settings, with the
// defaults filled in (sim.Config.WithDefaults), and its fleet if it has
// one.
func SystemOf(cfg sim.Config) System {
	if isFleet(cfg) {
		return fleetSystemOf(cfg)
	}
	nilModel := cfg.Model == nil
	cfg = cfg.WithDefaults()
	model := cfg.Model
	name := fmt.Sprintf("%T", model)
	if nilModel {
		name = "costmodel.Frozen (nil: the default)"
	}
	return System{
		Engine:     settings(cfg.Engine),
		Model:      name,
		ModelSetup: modelSettings(model),
		Run:        runSettings(cfg),
		// Its own section, not a run setting.
		Speculation: speculationText(cfg.Speculation),
	}
}

// fleetSystemOf renders a fleet: its replicas' engine and cost model
// (once when they are alike), its router and the run settings.
func fleetSystemOf(cfg sim.Config) System {
	f, alike, ok := fleetOf(cfg)
	s := System{Run: runSettings(cfg.WithDefaults()), Fleet: f}
	if ok {
		s.Engine, s.Model, s.ModelSetup = alike.Engine, alike.Model, alike.ModelSetup
		s.Speculation = alike.Speculation
	}
	return s
}

// runSettings are sim.Config's own fields; the engine, the cost model,
// the fleet, the SLO, the window and the speculative decoding have their
// own sections, and the seed is the card's Seeds. Classes and a warm start
// are summarised (classesValue, the cache state) rather than printed as
// structs.
func runSettings(cfg sim.Config) []Setting {
	var out []Setting
	for _, s := range settings(cfg) {
		switch s.Name {
		case "Engine", "Model", "Fleet", "SLO", "Window", "Seed", "Speculation":
			continue
		case "Classes":
			if cfg.Classes != nil {
				s.Value = classesValue(cfg.Classes)
			}
		case "Gateway":
			if !cfg.Gateway.On() {
				continue // none: the card reads as before gateways existed
			}
			s.Value = gatewayValue(cfg.Gateway)
		case "Warm":
			if cfg.Warm != nil {
				s.Value = fmt.Sprintf("%d prompts, %d prefix tokens (see the cache state)", len(cfg.Warm), warmTokens(cfg.Warm))
			}
		}
		out = append(out, s)
	}
	return out
}

// gatewayValue says which admission policies the gateway applies.
func gatewayValue(g sim.Gateway) string {
	var parts []string
	if b := g.Bucket; b.On() {
		parts = append(parts, fmt.Sprintf("token bucket %d tokens, %d per %v (%.4g req/s)", b.MaxTokens, max(b.TokensPerFill, 1), b.FillInterval, b.Rate()))
	}
	if l := g.Limit; l.On() {
		parts = append(parts, fmt.Sprintf("at most %d requests a replica, a queue of %d, TTL %v", l.PerReplica, l.Queue, l.TTL))
	}
	if sh := g.Shed; sh.On() {
		parts = append(parts, fmt.Sprintf("shed when every replica has more than %d waiting or KV above %.3g (0: not read)", sh.QueueDepth, sh.KVUtil))
	}
	return clip(strings.Join(parts, "; "))
}

// classesValue lists the classes with their own SLO bounds (a bound left
// 0 inherits the run's SLO) and priorities.
func classesValue(cs []sim.Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		var b []string
		for _, x := range []struct {
			name string
			v    time.Duration
		}{{"TTFT", c.SLO.TTFT}, {"ITL", c.SLO.ITL}, {"TPOT", c.SLO.TPOT}, {"E2E", c.SLO.E2E}} {
			switch {
			case x.v == sim.Unbounded:
				b = append(b, x.name+" unbounded")
			case x.v > 0:
				b = append(b, fmt.Sprintf("%s ≤ %v", x.name, x.v))
			}
		}
		parts[i] = fmt.Sprintf("%s (%s, priority %d)", c.Name, strings.Join(b, ", "), c.Priority)
	}
	return clip(strings.Join(parts, "; "))
}

// settings lists the exported fields of a struct (or of the struct a
// pointer points to) in declaration order; any other value is one setting
// named "value".
func settings(v any) []Setting {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return []Setting{{"value", clip(fmt.Sprintf("%v", v))}}
	}
	var out []Setting
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		out = append(out, Setting{f.Name, value(rv.Field(i))})
	}
	return out
}

// value prints a field; a nil interface, pointer, slice or map is "nil",
// which for servesim's configurations means the documented default.
func value(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Func:
		if v.IsNil() {
			return "nil (the default)"
		}
	}
	if v.Kind() == reflect.Interface && v.Elem().Kind() == reflect.Struct && v.Elem().NumField() == 0 {
		return fmt.Sprintf("%T", v.Interface()) // a policy such as engine.FCFS{} prints as {}
	}
	return clip(fmt.Sprintf("%v", v.Interface()))
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxValue {
		return string(r[:maxValue-1]) + "…"
	}
	return s
}
