package report

import "github.com/servesim/servesim/costmodel"

// profiled is a cost model that says where its step times come from and
// what it declares rather than measures (costmodel.ProfileModel).
type profiled interface {
	Provenance() costmodel.Provenance
	Assumptions() []string
}

// modelSettings are a cost model's rows on a card: its exported fields
// and, for a model built from a profile, the profile's provenance (the
// GPU, the software, when it was profiled and how) and each declared
// assumption, unclipped.
func modelSettings(m any) []Setting {
	out := settings(m)
	p, ok := m.(profiled)
	if !ok {
		return out
	}
	v := p.Provenance()
	for _, s := range []Setting{
		{"profile GPU", v.GPU}, {"profile model", v.Model}, {"profile variant", v.Variant},
		{"profile software", v.Framework}, {"profiled at", v.ProfiledAt}, {"profile method", v.Method},
		{"profile skew fit", v.Skew}, {"profile source", v.Source},
	} {
		if s.Value != "" {
			out = append(out, s)
		}
	}
	for _, a := range p.Assumptions() {
		out = append(out, Setting{"declared", a})
	}
	return out
}
