package report

import "github.com/servesim/servesim/scenario"

// Rerunnable is a card's Rerun when it embeds its scenario.
const Rerunnable = "from the scenario it embeds: go run ./examples/run -config <this card's JSON> (or scenario.LoadCard)"

// EmbedScenario sets the card's Scenario to s as data (written with r's
// kinds; nil means the built-in ones, scenario.Default) and its Rerun to
// Rerunnable; when s is not data or cannot run (a function in a field, a
// kind r does not know, a configuration its Validate refuses) it leaves
// Scenario nil and Rerun says why, naming the field. NewCard,
// NewExperimentCard and NewDialCard embed the sweep, experiment or dial
// sweep they were given; a caller with a whole scenario (a name, a claim,
// its outputs) or with kinds of its own embeds that instead.
func (c *Card) EmbedScenario(r *scenario.Registry, s scenario.Scenario) {
	if r == nil {
		r = scenario.Default()
	}
	raw, why := r.CardScenario(s)
	c.Scenario, c.Rerun = raw, why
	if raw != nil {
		c.Rerun = Rerunnable
	}
}
