package engine

import "iter"

// refTable finds a request by its Ref: the lookup of every Add and Abort.
// A driver's Refs are usually indices of its own records (the sim's are
// the slots of its requests in flight), small and dense, and those are
// kept in a slice indexed by Ref (no hashing). The slice grows only for a
// Ref below twice its length plus 1,024; a Ref beyond that, or negative,
// goes to a map, so that one large Ref never allocates a slice as long as
// it.
type refTable struct {
	dense  []*seq
	sparse map[int32]*seq
	n      int
}

func (t *refTable) len() int { return t.n }

func (t *refTable) get(ref int32) (*seq, bool) {
	if uint32(ref) < uint32(len(t.dense)) && t.dense[ref] != nil {
		return t.dense[ref], true
	}
	if t.sparse == nil {
		return nil, false
	}
	s, ok := t.sparse[ref]
	return s, ok
}

// put adds ref, which the table does not hold. A ref beyond the dense
// table's length grows the table, or for a far ref goes to the map.
func (t *refTable) put(ref int32, s *seq) {
	t.n++
	if uint32(ref) < uint32(len(t.dense)) { // the usual case
		t.dense[ref] = s
		return
	}
	if ref >= 0 && int(ref) < 2*len(t.dense)+1024 {
		t.dense = append(t.dense, make([]*seq, int(ref)+1-len(t.dense))...)
		t.dense[ref] = s
		return
	}
	if t.sparse == nil {
		t.sparse = make(map[int32]*seq)
	}
	t.sparse[ref] = s
}

// remove drops ref, which the table holds.
func (t *refTable) remove(ref int32) {
	t.n--
	if uint32(ref) < uint32(len(t.dense)) && t.dense[ref] != nil {
		t.dense[ref] = nil
		return
	}
	delete(t.sparse, ref)
}

// all yields every Ref held and its request.
func (t *refTable) all() iter.Seq2[int32, *seq] {
	return func(yield func(int32, *seq) bool) {
		for ref, s := range t.dense {
			if s != nil && !yield(int32(ref), s) {
				return
			}
		}
		for ref, s := range t.sparse {
			if !yield(ref, s) {
				return
			}
		}
	}
}
