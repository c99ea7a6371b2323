package report

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// CardFleet is a fleet's replicas and router as they ran (sim.Fleet). The
// card's System carries one when the run drove more than one replica, or
// set a router or a signal delay.
type CardFleet struct {
	Replicas int `json:"replicas"`
	// Router is the router's Go type; RouterSetup its fields, with the
	// router's documented defaults filled in (a router with a WithDefaults
	// method returning its own type, as sim.PrefixAffinity has).
	Router      string    `json:"router"`
	RouterSetup []Setting `json:"router_settings"`
	// SignalDelay is how stale the load a router read could be, s (0:
	// fresh at every arrival).
	SignalDelay float64 `json:"signal_delay_s"`
	// Groups are the replicas configured alike, each with its engine and
	// cost model, in the order of their first replica; nil when every
	// replica is configured alike (System's Engine and Model are then
	// each replica's).
	Groups []ReplicaGroup `json:"replica_groups,omitempty"`
	// Prefill is a disaggregated fleet's prefill pool (sim.PrefillPool),
	// nil for a co-located fleet: Replicas above are then its decode pool.
	Prefill *CardPrefill `json:"prefill,omitempty"`
	// HostTier and SharedStore are the KV tiers below HBM
	// (sim.Fleet.HostTier, SharedStore); nil without each.
	HostTier    *CardTier `json:"host_tier,omitempty"`
	SharedStore *CardTier `json:"shared_store,omitempty"`
}

// CardTier is a KV tier below HBM as it ran: its size in blocks, its
// link and the KV bytes a token moves over it (defaults filled in).
type CardTier struct {
	Blocks          int     `json:"blocks"`
	Link            string  `json:"link"`
	KVBytesPerToken float64 `json:"kv_bytes_per_token"`
}

// CardPrefill is a prefill pool as it ran: its replicas (each group's
// indices are the fleet's, after the decode pool's), its router, its
// decider, its link and the KV bytes a token moves.
type CardPrefill struct {
	Replicas        int            `json:"replicas"`
	Groups          []ReplicaGroup `json:"replica_groups"`
	Router          string         `json:"router"`
	Decider         string         `json:"decider"`
	Link            string         `json:"link"`
	KVBytesPerToken float64        `json:"kv_bytes_per_token"`
}

// ReplicaGroup is the replicas of a heterogeneous fleet that share one
// configuration, and that configuration with its defaults filled in.
type ReplicaGroup struct {
	Replicas   []int     `json:"replicas"` // indices, ascending
	Engine     []Setting `json:"engine"`
	Model      string    `json:"cost_model"`
	ModelSetup []Setting `json:"cost_model_settings"`
	// Speculation is the group's speculative decoding
	// (sim.ReplicaConfig.Speculation's String); "" without any.
	Speculation string `json:"speculation,omitempty"`
}

// isFleet reports whether cfg is more than the single replica a card has
// always described: several replicas, a router or a signal delay.
func isFleet(cfg sim.Config) bool {
	f := cfg.Fleet
	return len(f.Replicas) > 1 || f.Router != nil || f.SignalDelay != 0 || f.Prefill.On() || f.HostTier.On() || f.SharedStore.On()
}

// fleetOf describes cfg's fleet, and the replicas' configuration when
// they are all alike (ok), for System's Engine and Model.
func fleetOf(cfg sim.Config) (f *CardFleet, alike ReplicaGroup, ok bool) {
	router := cfg.Fleet.Router
	name := fmt.Sprintf("%T", router)
	if router == nil {
		router, name = sim.RoundRobin{}, "sim.RoundRobin (nil: the default)"
	}
	f = &CardFleet{
		Router: name, RouterSetup: settings(withDefaults(router)),
		SignalDelay: cfg.Fleet.SignalDelay.Seconds(),
	}
	reps := cfg.Fleet.Replicas
	if reps == nil {
		reps = []sim.ReplicaConfig{{Engine: cfg.Engine, Model: cfg.Model, Speculation: cfg.Speculation}}
	}
	f.Replicas = len(reps)
	f.Prefill = prefillOf(cfg.Fleet.Prefill, len(reps))
	if h := cfg.Fleet.HostTier; h.On() {
		f.HostTier = &CardTier{Blocks: h.Blocks, Link: h.Link.String(), KVBytesPerToken: h.KVBytesPerToken}
		if h.KVBytesPerToken == 0 {
			f.HostTier.KVBytesPerToken = costmodel.AtlasKVBytesPerToken
		}
	}
	if s := cfg.Fleet.SharedStore; s.On() {
		f.SharedStore = &CardTier{Blocks: s.Blocks, Link: s.Link.String(), KVBytesPerToken: s.KVBytesPerToken}
		if s.KVBytesPerToken == 0 {
			f.SharedStore.KVBytesPerToken = 4 * costmodel.AtlasKVBytesPerToken
		}
	}
	groups := groupReplicas(reps)
	if len(groups) == 1 {
		return f, groups[0], true
	}
	f.Groups = groups
	return f, ReplicaGroup{}, false
}

// prefillOf describes a prefill pool whose replicas follow decoders in
// the fleet; nil without one.
func prefillOf(p sim.PrefillPool, decoders int) *CardPrefill {
	if !p.On() {
		return nil
	}
	typeName := func(v any, zero string) string {
		if v == nil {
			return zero
		}
		return fmt.Sprintf("%T", v)
	}
	c := &CardPrefill{Replicas: len(p.Replicas), Groups: groupReplicas(p.Replicas),
		Router: typeName(p.Router, "sim.RoundRobin (nil: the default)"), Decider: typeName(p.Decider, "sim.AlwaysRemote (nil: the default)"),
		Link: p.Link.String(), KVBytesPerToken: p.KVBytesPerToken}
	if d, ok := p.Decider.(sim.PrefixThreshold); ok {
		c.Decider = fmt.Sprintf("sim.PrefixThreshold{NonCachedTokens: %d}", d.NonCachedTokens)
	}
	if c.KVBytesPerToken == 0 {
		c.KVBytesPerToken = costmodel.AtlasKVBytesPerToken
	}
	for i := range c.Groups {
		for j := range c.Groups[i].Replicas {
			c.Groups[i].Replicas[j] += decoders
		}
	}
	return c
}

// groupReplicas gathers the replicas whose configurations, defaults
// filled in, print alike.
func groupReplicas(reps []sim.ReplicaConfig) []ReplicaGroup {
	var groups []ReplicaGroup
	for i, r := range reps {
		g := replicaSystem(r)
		at := slices.IndexFunc(groups, func(h ReplicaGroup) bool {
			return h.Model == g.Model && slices.Equal(h.Engine, g.Engine) && slices.Equal(h.ModelSetup, g.ModelSetup) &&
				h.Speculation == g.Speculation
		})
		if at < 0 {
			groups, at = append(groups, g), len(groups)
		}
		groups[at].Replicas = append(groups[at].Replicas, i)
	}
	return groups
}

// replicaSystem renders one replica's engine and cost model as it ran.
func replicaSystem(r sim.ReplicaConfig) ReplicaGroup {
	cfg := sim.Config{Engine: r.Engine, Model: r.Model}.WithDefaults()
	name := fmt.Sprintf("%T", cfg.Model)
	if r.Model == nil {
		name = "costmodel.Frozen (nil: the default)"
	}
	g := ReplicaGroup{Engine: settings(cfg.Engine), Model: name, ModelSetup: modelSettings(cfg.Model)}
	g.Speculation = speculationText(r.Speculation)
	return g
}

// withDefaults returns v.WithDefaults() when v has such a method returning
// its own type (sim.PrefixAffinity's SGLang thresholds), else v.
func withDefaults(v any) any {
	m := reflect.ValueOf(v).MethodByName("WithDefaults")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0) != reflect.TypeOf(v) {
		return v
	}
	return m.Call(nil)[0].Interface()
}

// markdown writes the fleet's table: replicas, router and its settings,
// signal delay.
func (f *CardFleet) markdown(b *strings.Builder) {
	b.WriteString("| fleet (`sim.Fleet`) | value |\n|---|---|\n")
	reps := fmt.Sprintf("%d, configured alike: the engine and cost model below are each replica's", f.Replicas)
	if len(f.Groups) > 0 {
		reps = fmt.Sprintf("%d, in %d configurations (below)", f.Replicas, len(f.Groups))
	}
	row(b, "replicas", reps)
	row(b, "router", code(f.Router))
	for _, s := range f.RouterSetup {
		row(b, "router: "+s.Name, code(s.Value))
	}
	delay := time.Duration(f.SignalDelay * float64(time.Second))
	if delay == 0 {
		row(b, "SignalDelay", code(delay.String())+": the router reads fresh load at every arrival")
	} else {
		row(b, "SignalDelay", code(delay.String())+": the router reads each replica's load as of its last refresh, at most this old, plus its own decisions since")
	}
	if p := f.Prefill; p != nil {
		row(b, "replicas above", "the decode pool of a disaggregated fleet")
		row(b, "prefill pool", fmt.Sprintf("%d replicas (%s), configured as below", p.Replicas, indices(p.Groups)))
		row(b, "prefill router", code(p.Router))
		row(b, "decider", code(p.Decider))
		row(b, "link", code(p.Link)+", one per prefill replica")
		row(b, "KV bytes per token", fmt.Sprintf("%.0f", p.KVBytesPerToken))
	}
	if h := f.HostTier; h != nil {
		row(b, "host tier", fmt.Sprintf("%d blocks a replica, link %s (one a replica), %.0f KV bytes a token", h.Blocks, code(h.Link), h.KVBytesPerToken))
	}
	if s := f.SharedStore; s != nil {
		row(b, "shared store", fmt.Sprintf("%d blocks, link %s (one for the fleet), %.0f KV bytes a token", s.Blocks, code(s.Link), s.KVBytesPerToken))
	}
	b.WriteString("\n")
	if p := f.Prefill; p != nil {
		for i := range p.Groups {
			p.Groups[i].markdown(b)
		}
	}
}

// indices lists the replicas of groups, ascending.
func indices(groups []ReplicaGroup) string {
	var all []int
	for _, g := range groups {
		all = append(all, g.Replicas...)
	}
	slices.Sort(all)
	s := make([]string, len(all))
	for i, r := range all {
		s[i] = fmt.Sprint(r)
	}
	return "replicas " + strings.Join(s, ", ")
}

// markdown writes one configuration of a heterogeneous fleet.
func (g *ReplicaGroup) markdown(b *strings.Builder) {
	which := make([]string, len(g.Replicas))
	for i, r := range g.Replicas {
		which[i] = fmt.Sprint(r)
	}
	label := "replica " + which[0]
	if len(which) > 1 {
		label = "replicas " + strings.Join(which, ", ")
	}
	fmt.Fprintf(b, "| engine (`engine.Config`), %s | value |\n|---|---|\n", label)
	settingRows(b, g.Engine)
	fmt.Fprintf(b, "\n| cost model (%s), %s | value |\n|---|---|\n", code(g.Model), label)
	settingRows(b, g.ModelSetup)
	b.WriteString("\n")
	mdSpeculationLine(b, g.Speculation, label)
}
