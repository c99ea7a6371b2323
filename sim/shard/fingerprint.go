package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"reflect"
	"runtime"
	"slices"
)

// studyFingerprint is the fingerprint of a study's configuration, as
// "sha256:" and 64 hex digits: sha256 over its kind and a canonical walk
// of its value, every field (exported or not) by name, floats by their
// bits, interfaces by their dynamic type and value, pointers followed,
// maps in key order, and functions by their name (a closure's name says
// which literal it is, not what it captured). Two processes that build the
// same study get the same fingerprint; a study that differs in any field
// gets another, so the shards of different studies cannot be merged.
//
// What the walk cannot see is not in it: what a function captures, and the
// content of a file a configuration names (a TraceWorkload's trace enters
// by its path and reading options; a card's workload fingerprint covers
// the requests). The caller leaves out what does not change the runs
// (Workers, Observe, RunLoads).
func studyFingerprint(kind string, study any) string {
	f := fingerprinter{h: sha256.New(), seen: map[uintptr]bool{}}
	f.string(kind)
	f.value(reflect.ValueOf(study))
	return "sha256:" + hex.EncodeToString(f.h.Sum(nil))
}

// fingerprinter feeds a canonical walk of a value to a hash.
type fingerprinter struct {
	h    hash.Hash
	seen map[uintptr]bool // pointers on the current path (a cycle ends there)
	buf  []byte
}

func (f *fingerprinter) uint(x uint64) {
	f.buf = binary.AppendUvarint(f.buf[:0], x)
	f.h.Write(f.buf)
}

func (f *fingerprinter) string(s string) {
	f.uint(uint64(len(s)))
	f.h.Write([]byte(s))
}

// value writes v's kind and its content.
func (f *fingerprinter) value(v reflect.Value) {
	if !v.IsValid() {
		f.string("nil")
		return
	}
	f.string(typeName(v.Type()))
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			f.uint(1)
		} else {
			f.uint(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.uint(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		f.uint(v.Uint())
	case reflect.Float32, reflect.Float64:
		f.uint(math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		f.uint(math.Float64bits(real(v.Complex())))
		f.uint(math.Float64bits(imag(v.Complex())))
	case reflect.String:
		f.string(v.String())
	case reflect.Slice, reflect.Array:
		f.list(v)
	case reflect.Struct:
		for i := range v.NumField() {
			f.string(v.Type().Field(i).Name)
			f.value(v.Field(i))
		}
	case reflect.Map:
		f.mapEntries(v)
	case reflect.Pointer, reflect.Interface:
		f.indirect(v)
	case reflect.Func:
		f.function(v)
	default: // channels, unsafe pointers: their type only
	}
}

func (f *fingerprinter) list(v reflect.Value) {
	if v.Kind() == reflect.Slice && v.IsNil() {
		f.string("nil")
		return
	}
	f.uint(uint64(v.Len()))
	for i := range v.Len() {
		f.value(v.Index(i))
	}
}

// mapEntries writes a map's entries in the order of their keys' own
// fingerprints, so that iteration order changes nothing.
func (f *fingerprinter) mapEntries(v reflect.Value) {
	if v.IsNil() {
		f.string("nil")
		return
	}
	type entry struct{ key, val []byte }
	var entries []entry
	for it := v.MapRange(); it.Next(); {
		entries = append(entries, entry{f.sub(it.Key()), f.sub(it.Value())})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	f.uint(uint64(len(entries)))
	for _, e := range entries {
		f.h.Write(e.key)
		f.h.Write(e.val)
	}
}

// sub is v's own fingerprint, to sort and write it.
func (f *fingerprinter) sub(v reflect.Value) []byte {
	g := fingerprinter{h: sha256.New(), seen: f.seen}
	g.value(v)
	return g.h.Sum(nil)
}

func (f *fingerprinter) indirect(v reflect.Value) {
	if v.IsNil() {
		f.string("nil")
		return
	}
	if v.Kind() == reflect.Pointer {
		p := v.Pointer()
		if f.seen[p] {
			f.string("cycle")
			return
		}
		f.seen[p] = true
		defer delete(f.seen, p)
	}
	f.value(v.Elem())
}

func (f *fingerprinter) function(v reflect.Value) {
	if v.IsNil() {
		f.string("nil")
		return
	}
	name := "unknown function"
	if fn := runtime.FuncForPC(v.Pointer()); fn != nil {
		name = fn.Name()
	}
	f.string(name)
}

// typeName names t by its package's path, so that two packages' types of
// one name differ.
func typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}
