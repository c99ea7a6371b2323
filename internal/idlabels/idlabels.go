// Package idlabels reads block ids as what they are, labels of content:
// what a request stream says with them is which blocks are equal, not
// their numbers. Tests use it to show that a change which renumbers ids
// keeps every equality between them.
package idlabels

// Labels renames ids by first appearance: each id becomes the number of
// distinct ids seen before its first appearance, across every call on
// the same Labels. Two streams whose ids differ only in their numbers
// (the same ids equal, the same ones distinct) get the same labels.
type Labels struct {
	first map[uint64]uint64
}

// Of returns ids' labels, in a new slice.
func (l *Labels) Of(ids []uint64) []uint64 {
	if l.first == nil {
		l.first = map[uint64]uint64{}
	}
	out := make([]uint64, len(ids))
	for i, id := range ids {
		k, ok := l.first[id]
		if !ok {
			k = uint64(len(l.first))
			l.first[id] = k
		}
		out[i] = k
	}
	return out
}
