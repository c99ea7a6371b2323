package shard

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"

	"github.com/servesim/servesim/sim"
)

// A shard file is gzip over a binary encoding of its Result: a magic
// line and version, the header (kind, study, shard, runs, build), the
// layout of sim.Summary it was written with, then each run. Numbers are
// varints, floats their IEEE-754 bits and every slice says whether it is
// nil, so a summary reads back bit for bit: NaN attainment, ±Inf latencies,
// −0 and nil against empty slices included.
//
// Why not encoding/gob: gob leaves out a struct field equal to zero and
// compares floats by value, so −0 comes back +0, and an empty slice comes
// back nil; and gob matches fields by name, so a file written by a
// simulator whose Summary has other fields decodes with zeros where they
// differ. Why not JSON: it has no NaN or ±Inf. The layout hash here
// refuses such a file instead, and gzip's checksum refuses a damaged one.
const shardMagic = "servesim shard file\n"

const shardVersion = 2

// summaryLayout is the hash of sim.Summary's layout (every field's name and
// type, recursively), or the error naming a field the codec cannot carry.
var summaryLayout = sync.OnceValues(func() (string, error) {
	h := sha256.New()
	if err := layout(h, reflect.TypeFor[sim.Summary](), "sim.Summary"); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
})

// layout writes t's layout to w, refusing what the codec cannot carry.
func layout(w io.Writer, t reflect.Type, path string) error {
	fmt.Fprintf(w, "%s(", t.Kind())
	defer fmt.Fprint(w, ")")
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float64, reflect.String:
		return nil
	case reflect.Slice:
		return layout(w, t.Elem(), path+"[]")
	case reflect.Pointer: // nil or a value (sim.Summary.Disagg)
		return layout(w, t.Elem(), path)
	case reflect.Array:
		fmt.Fprintf(w, "%d,", t.Len())
		return layout(w, t.Elem(), path+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				return fmt.Errorf("shard: a shard file cannot carry %s.%s: an unexported field", path, f.Name)
			}
			fmt.Fprintf(w, "%s:", f.Name)
			if err := layout(w, f.Type, path+"."+f.Name); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("shard: a shard file cannot carry %s, of kind %s", path, t.Kind())
}

// Write writes the shard's result in the shard file format.
func (r *Result) Write(w io.Writer) error {
	lay, err := summaryLayout()
	if err != nil {
		return err
	}
	z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	e := &encoder{w: bufio.NewWriter(z)}
	e.w.WriteString(shardMagic)
	e.uint(shardVersion)
	for _, s := range []string{r.Kind, r.Study, r.Build, lay} {
		e.string(s)
	}
	for _, n := range []int{r.Shard.Index, r.Shard.Count, r.Runs, len(r.runs)} {
		e.uint(uint64(n))
	}
	for i := range r.runs {
		run := &r.runs[i]
		e.uint(uint64(run.job))
		if r.Kind == experimentKind {
			e.value(reflect.ValueOf(run.figures))
		} else {
			e.value(reflect.ValueOf(&run.summary).Elem())
		}
	}
	return errors.Join(e.w.Flush(), z.Close())
}

// Read reads a shard's result written by Write.
func Read(rd io.Reader) (*Result, error) {
	z, err := gzip.NewReader(rd)
	if err != nil {
		return nil, fmt.Errorf("not a shard file: %w", err)
	}
	d := &decoder{r: bufio.NewReader(z)}
	magic := make([]byte, len(shardMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != shardMagic {
		return nil, errors.New("not a shard file (no servesim shard header)")
	}
	if v := d.uint(); v != shardVersion && d.err == nil {
		return nil, fmt.Errorf("shard file version %d; this simulator reads version %d", v, shardVersion)
	}
	r := &Result{Kind: d.string(), Study: d.string(), Build: d.string()}
	lay := d.string()
	want, err := summaryLayout()
	if err != nil {
		return nil, err
	}
	if lay != want && d.err == nil {
		return nil, fmt.Errorf("written by a simulator whose sim.Summary has another layout (%s; this one's is %s)", lay, want)
	}
	r.Shard = ID{Index: d.int(), Count: d.int()}
	r.Runs = d.int()
	n := d.int()
	for i := 0; i < n && d.err == nil; i++ {
		run := outcome{job: d.int()}
		if r.Kind == experimentKind {
			d.value(reflect.ValueOf(&run.figures).Elem())
		} else {
			d.value(reflect.ValueOf(&run.summary).Elem())
		}
		r.runs = append(r.runs, run)
	}
	if d.err == nil { // read to the end, so that gzip checks its checksum
		switch _, err := d.r.ReadByte(); {
		case err == nil:
			d.err = errors.New("trailing data after the last run")
		case err != io.EOF:
			d.err = err
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("damaged shard file: %w", d.err)
	}
	return r, nil
}

// encoder writes values in the shard file's encoding.
type encoder struct {
	w   *bufio.Writer
	buf [binary.MaxVarintLen64]byte
}

func (e *encoder) uint(x uint64) { e.w.Write(binary.AppendUvarint(e.buf[:0], x)) }
func (e *encoder) int(x int64)   { e.w.Write(binary.AppendVarint(e.buf[:0], x)) }
func (e *encoder) float(x float64) {
	e.w.Write(binary.LittleEndian.AppendUint64(e.buf[:0], math.Float64bits(x)))
}
func (e *encoder) string(s string) {
	e.uint(uint64(len(s)))
	e.w.WriteString(s)
}

// value writes v, of a type layout accepts: a slice as 0 when nil, else
// its length + 1, then its elements.
func (e *encoder) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.uint(1)
		} else {
			e.uint(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.uint(v.Uint())
	case reflect.Float64:
		e.float(v.Float())
	case reflect.String:
		e.string(v.String())
	case reflect.Slice:
		if v.IsNil() {
			e.uint(0)
			return
		}
		e.uint(uint64(v.Len()) + 1)
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			e.uint(0)
			return
		}
		e.uint(1)
		e.value(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			e.value(v.Field(i))
		}
	default:
		panic("shard: codec: " + v.Kind().String() + " passed layout") // layout refuses it first
	}
}

// decoder reads what encoder wrote; its first error sticks, and every
// read after it yields zero.
type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(d.r)
	d.fail(err)
	return x
}

func (d *decoder) int() int {
	x := d.uint()
	if x > math.MaxInt32 {
		d.fail(fmt.Errorf("a count of %d is beyond any study", x))
		return 0
	}
	return int(x)
}

func (d *decoder) float() float64 {
	var b [8]byte
	if d.err == nil {
		_, err := io.ReadFull(d.r, b[:])
		d.fail(err)
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

func (d *decoder) string() string {
	n := d.int()
	b := make([]byte, 0, min(n, 1<<16))
	for i := 0; i < n && d.err == nil; i++ {
		c, err := d.r.ReadByte()
		d.fail(err)
		b = append(b, c)
	}
	return string(b)
}

func (d *decoder) fail(err error) {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if d.err == nil && err != nil {
		d.err = err
	}
}

// value reads into v (settable) what encoder.value wrote from a value of
// v's type. Slices grow as their elements arrive, so a damaged length
// costs no more memory than the file holds.
func (d *decoder) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(d.uint() == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if d.err == nil {
			x, err := binary.ReadVarint(d.r)
			d.fail(err)
			v.SetInt(x)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(d.uint())
	case reflect.Float64:
		v.SetFloat(d.float())
	case reflect.String:
		v.SetString(d.string())
	case reflect.Slice:
		n := d.int()
		if n == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 0, min(n-1, 1024))
		for i := 0; i < n-1 && d.err == nil; i++ {
			s = reflect.Append(s, reflect.Zero(v.Type().Elem()))
			d.value(s.Index(i))
		}
		v.Set(s)
	case reflect.Pointer:
		if d.uint() == 1 && d.err == nil {
			v.Set(reflect.New(v.Type().Elem()))
			d.value(v.Elem())
		}
	case reflect.Array:
		for i := range v.Len() {
			d.value(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			d.value(v.Field(i))
		}
	default:
		panic("shard: codec: " + v.Kind().String() + " passed layout")
	}
}
