package report

import "github.com/servesim/servesim/sim"

// Observers combines observers into the one sim.Run takes: each record
// goes to every observer in order, and each step to every one that is a
// sim.StepObserver. The result is a sim.StepObserver only when one of
// them is, so that a run whose observers want no steps spends nothing on
// describing them. Nil observers are left out; with none left, Observers
// returns nil.
func Observers(obs ...sim.Observer) sim.Observer {
	var all []sim.Observer
	var steps []sim.StepObserver
	for _, o := range obs {
		if o == nil {
			continue
		}
		all = append(all, o)
		if s, ok := o.(sim.StepObserver); ok {
			steps = append(steps, s)
		}
	}
	switch {
	case len(all) == 0:
		return nil
	case len(all) == 1:
		return all[0]
	case len(steps) == 0:
		return recordTee(all)
	}
	return stepTee{all, steps}
}

// recordTee hands each record to every observer.
type recordTee []sim.Observer

func (t recordTee) Observe(r *sim.Record) {
	for _, o := range t {
		o.Observe(r)
	}
}

// stepTee hands records to every observer and steps to those that want
// them.
type stepTee struct {
	records recordTee
	steps   []sim.StepObserver
}

func (t stepTee) Observe(r *sim.Record) { t.records.Observe(r) }

func (t stepTee) ObserveStep(s *sim.Step) {
	for _, o := range t.steps {
		o.ObserveStep(s)
	}
}
