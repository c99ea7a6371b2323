package engine

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestRecycleLeavesANewSeq scribbles over every field of a seq and of
// its runSeq, recycles it, and holds it to a new one (newSeq's): zero but
// for its heapIdx, -1, its slices' capacity and its runs, kept and
// emptied. recycle zeroes field by field (see recycle): a field added to
// seq or runSeq and left out there fails here.
func TestRecycleLeavesANewSeq(t *testing.T) {
	e := &Engine{}
	s := e.newSeq()
	ids, keys := make([]int32, 3, 8), make([]uint64, 2, 4)
	runs := &runSeq{}
	var fields int
	scribble(reflect.ValueOf(s).Elem(), &fields)
	scribble(reflect.ValueOf(runs).Elem(), &fields)
	runs.path, runs.copies = make([]runLabel, 2, 5), make([]runCopy, 1, 3)
	require.Greater(t, fields, 45, "fields scribbled over")
	require.NotNil(t, s.req.Prefix)
	require.NotNil(t, runs.cs)
	s.ids, s.keys, s.runs = ids, keys, runs
	e.recycle(s)
	require.Equal(t, []*seq{s}, e.spare)

	require.Equal(t, unsafe.SliceData(ids), unsafe.SliceData(s.ids))
	require.Zero(t, len(s.ids))
	require.Equal(t, 8, cap(s.ids))
	require.Equal(t, unsafe.SliceData(keys), unsafe.SliceData(s.keys))
	require.Zero(t, len(s.keys))
	require.Equal(t, 4, cap(s.keys))
	require.Same(t, runs, s.runs)
	require.Zero(t, len(runs.path))
	require.Equal(t, 5, cap(runs.path))
	require.Zero(t, len(runs.copies))
	require.Equal(t, 3, cap(runs.copies))
	require.Equal(t, runSeq{path: runs.path, copies: runs.copies}, *runs)
	require.Equal(t, seq{ids: s.ids, keys: s.keys, runs: runs, heapIdx: -1}, *s)
	require.Same(t, s, e.newSeq()) // handed out again
}

// scribble sets every field it reaches in v, a struct, to a value that
// is not its zero: numbers to 1 (or -1 unsigned: all ones), bools to
// true, slices to one element, pointers to a new value; it counts the
// fields set.
func scribble(v reflect.Value, n *int) {
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // unexported fields too
		switch f.Kind() {
		case reflect.Struct:
			scribble(f, n)
			continue
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(^uint64(0) >> (64 - 8*f.Type().Size()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			panic("scribble: a field of kind " + f.Kind().String())
		}
		*n++
	}
}
