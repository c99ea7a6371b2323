package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/sim/report"
)

// recorded are the parts of a card that hold what its runs found: a
// sweep's results, an experiment's verdict, a dial sweep's knees. A rerun
// of the card is held to them.
var recorded = []string{"results", "verdict", "dial_sweep"}

// provenance are keys under recorded that say where a figure came from,
// in words a program fills (a capacity's source), not what a run found.
var provenance = []string{"source"}

// maxListed bounds the differences listed; the count says the rest.
const maxListed = 20

// difference is one recorded figure the rerun did not reproduce.
type difference struct {
	path        string // e.g. results.knee.load.center
	card, rerun string // their JSON, or "absent"
}

// compareCards compares what the card (its JSON) recorded with what the
// rerun's card found, part by part: the figures that differ, and how many
// figures were compared.
func compareCards(card []byte, rerun report.Card) ([]difference, int, error) {
	again, err := json.Marshal(rerun)
	if err != nil {
		return nil, 0, err
	}
	var was, now map[string]any
	if err := unmarshal(card, &was); err != nil {
		return nil, 0, fmt.Errorf("reading the card's results: %w", err)
	}
	if err := unmarshal(again, &now); err != nil {
		return nil, 0, err
	}
	var diffs []difference
	n := 0
	for _, key := range recorded {
		a, inCard := was[key]
		b, inRerun := now[key]
		if !inCard && !inRerun {
			continue
		}
		walk(key, a, b, inCard, inRerun, &diffs, &n)
	}
	return diffs, n, nil
}

// unmarshal decodes JSON keeping numbers as written, so that equal
// figures compare equal and a difference prints as the card has it.
func unmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// walk compares two decoded JSON values at path, counting the leaves and
// appending those that differ.
func walk(path string, a, b any, inA, inB bool, diffs *[]difference, n *int) {
	ma, aObj := a.(map[string]any)
	mb, bObj := b.(map[string]any)
	// An object on one side only is compared with an empty one, so that
	// each of its figures is listed as absent on the other.
	if aObj && !inB || bObj && !inA {
		aObj, bObj = true, true
	}
	if aObj && bObj {
		keys := make([]string, 0, len(ma)+len(mb))
		for k := range ma {
			keys = append(keys, k)
		}
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if slices.Contains(provenance, k) {
				continue
			}
			va, okA := ma[k]
			vb, okB := mb[k]
			walk(path+"."+k, va, vb, okA, okB, diffs, n)
		}
		return
	}
	la, aList := a.([]any)
	lb, bList := b.([]any)
	if aList && bList {
		for i := range max(len(la), len(lb)) {
			var va, vb any
			if i < len(la) {
				va = la[i]
			}
			if i < len(lb) {
				vb = lb[i]
			}
			walk(path+"["+strconv.Itoa(i)+"]", va, vb, i < len(la), i < len(lb), diffs, n)
		}
		return
	}
	*n++
	ja, jb := text(a, inA), text(b, inB)
	if ja != jb {
		*diffs = append(*diffs, difference{path: path, card: ja, rerun: jb})
	}
}

// text is a decoded JSON value as JSON, "absent" when it was not there.
func text(v any, present bool) string {
	if !present {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// writeReproduction says whether the rerun reproduced the card's
// figures, listing those that differ, and returns an error when some do:
// a card that does not reproduce is a failed check, as a test is.
func writeReproduction(w io.Writer, path string, card []byte, cards []report.Card) error {
	if len(cards) == 0 {
		fmt.Fprintf(w, "\nrerun      %s: this run writes no card, so there is nothing to compare with the card's results\n", path)
		return nil
	}
	rerun := cards[0]
	var title struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(card, &title)
	for _, c := range cards {
		if c.Title == title.Title {
			rerun = c
			break
		}
	}
	diffs, n, err := compareCards(card, rerun)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case n == 0:
		fmt.Fprintf(w, "\nrerun      %s records no results: nothing to compare\n", path)
		return nil
	case len(diffs) == 0:
		fmt.Fprintf(w, "\nrerun      reproduced: every one of the %d figures %s records (%s) is the rerun's\n", n, path, strings.Join(present(card), ", "))
		return nil
	}
	fmt.Fprintf(w, "\nrerun      NOT reproduced: %d of the %d figures %s records differ from the rerun's:\n", len(diffs), n, path)
	for i, d := range diffs {
		if i == maxListed {
			fmt.Fprintf(w, "           … and %d more\n", len(diffs)-maxListed)
			break
		}
		fmt.Fprintf(w, "           %s: card %s, rerun %s\n", d.path, d.card, d.rerun)
	}
	return fmt.Errorf("the rerun does not reproduce %s: %d of %d recorded figures differ (listed above)", path, len(diffs), n)
}

// present lists the recorded parts the card has.
func present(card []byte) []string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(card, &m)
	var out []string
	for _, k := range recorded {
		if v, ok := m[k]; ok && string(v) != "null" {
			out = append(out, k)
		}
	}
	return out
}
