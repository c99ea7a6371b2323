package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// The encoding, for every configuration type:
//   - a struct is an object of its exported fields, by their Go names, in
//     declaration order; a field at its zero value is left out, and a
//     missing field reads as its zero value (so the zero value of every
//     config, which is documented, round-trips as {});
//   - a time.Duration is a string in Go's notation ("45ms", "1m30s"): a
//     unit is always written, never implied;
//   - a value of an interface type is an object with "kind" (its
//     registered name) beside its own fields;
//   - slices are arrays, maps with string keys objects, pointers their
//     target or null;
//   - a function is not data: a non-nil one is an error naming its path,
//     and a field of function type cannot be read;
//   - a type with its own MarshalJSON and UnmarshalJSON (a metric, a dial,
//     a compiled table) uses them.
//
// Reading is strict: an unknown field, an unknown kind, a wrong type or
// trailing data is an error naming the path, as "sim.Config.Engine.ChunkCap"
// or "sim.Config.Model: costmodel.Model kind \"Foo\" is not registered".

var (
	durationType    = reflect.TypeFor[time.Duration]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

func implementsJSON(t reflect.Type) bool {
	return t.Implements(marshalerType) && reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Kind() == reflect.Pointer && t.Implements(marshalerType) && t.Implements(unmarshalerType)
}

// Marshal encodes v, a configuration value (or a pointer to one), as
// indented JSON.
func (r *Registry) Marshal(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, errors.New("scenario: Marshal of nil")
	}
	var buf bytes.Buffer
	if err := r.encode(&buf, typeName(rv.Type()), rv); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// typeName is a type's package-qualified name, "sim.Config", for paths.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.String()
}

func (r *Registry) encode(buf *bytes.Buffer, path string, v reflect.Value) error {
	t := v.Type()
	if t == durationType {
		return writeJSON(buf, time.Duration(v.Int()).String())
	}
	if t.Kind() != reflect.Interface && implementsJSON(t) {
		if t.Kind() == reflect.Pointer && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return fmt.Errorf("scenario: %s: %w", path, err)
		}
		buf.Write(b)
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return r.encodeKind(buf, path, t, v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return r.encode(buf, path, v.Elem())
	case reflect.Struct:
		buf.WriteByte('{')
		_, err := r.encodeFields(buf, path, v, 0)
		buf.WriteByte('}')
		return err
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := r.encode(buf, fmt.Sprintf("%s[%d]", path, i), v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("scenario: %s: a map keyed by %v is not data (keys must be strings)", path, t.Key())
		}
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, k.String()); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := r.encode(buf, fmt.Sprintf("%s[%q]", path, k.String()), v.MapIndex(k)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return fmt.Errorf("scenario: %s is a %v (%v): not data; use a registered kind instead", path, t.Kind(), t)
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("scenario: %s is %v: not a finite number", path, f)
		}
	}
	return writeJSON(buf, v.Interface())
}

// encodeFields writes a struct's non-zero exported fields, after n
// members already written; it returns the members written in all.
func (r *Registry) encodeFields(buf *bytes.Buffer, path string, v reflect.Value, n int) (int, error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.IsZero() {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		if err := writeJSON(buf, f.Name); err != nil {
			return n, err
		}
		buf.WriteByte(':')
		if err := r.encode(buf, path+"."+f.Name, fv); err != nil {
			return n, err
		}
	}
	return n, nil
}

// encodeKind writes a value of interface type it as its kind and fields.
func (r *Registry) encodeKind(buf *bytes.Buffer, path string, it reflect.Type, v reflect.Value) error {
	k := r.ifaces[it]
	name, ok := "", false
	if k != nil {
		name, ok = k.byType[v.Type()]
	}
	if !ok {
		if v.Kind() == reflect.Func {
			return fmt.Errorf("scenario: %s is a function (%v): not data; use a registered kind of %v instead", path, v.Type(), it)
		}
		return fmt.Errorf("scenario: %s: %v is not a registered kind of %v (register it with scenario.Register)", path, v.Type(), it)
	}
	if implementsJSON(v.Type()) {
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return fmt.Errorf("scenario: %s: %w", path, err)
		}
		buf.WriteString(`{"kind":`)
		if err := writeJSON(buf, name); err != nil {
			return err
		}
		buf.WriteString(`,"value":`)
		buf.Write(b)
		buf.WriteByte('}')
		return nil
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return fmt.Errorf("scenario: %s: a nil %v", path, v.Type())
		}
		v = v.Elem()
	}
	buf.WriteString(`{"kind":`)
	if err := writeJSON(buf, name); err != nil {
		return err
	}
	_, err := r.encodeFields(buf, path, v, 1)
	buf.WriteByte('}')
	return err
}

// writeJSON writes x as JSON, leaving <, > and & as they are (a scenario
// is read by people, not embedded in HTML).
func writeJSON(buf *bytes.Buffer, x any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// Unmarshal decodes data into v, a pointer to a configuration value,
// strictly: unknown fields and kinds, wrong types and trailing data are
// errors naming the path. A UTF-8 byte order mark before the value is
// skipped, as the trace readers skip one.
func (r *Registry) Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("scenario: Unmarshal needs a non-nil pointer, got %T", v)
	}
	data = trimBOM(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("scenario: %s: %w", typeName(rv.Type()), syntaxWhere(data, err))
	}
	if dec.More() {
		return fmt.Errorf("scenario: %s: trailing data after the value", typeName(rv.Type()))
	}
	return r.decode(typeName(rv.Type()), raw, rv.Elem())
}

// utf8BOM is the byte order mark some editors (Notepad, PowerShell's
// Out-File) write before a file's text; encoding/json refuses it
// ("invalid character 'ï'").
var utf8BOM = []byte("\ufeff")

// trimBOM drops a byte order mark at the start of data.
func trimBOM(data []byte) []byte { return bytes.TrimPrefix(data, utf8BOM) }

// syntaxWhere adds the line and column of a JSON syntax error.
func syntaxWhere(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, c := range data[:max(0, min(int(se.Offset)-1, len(data)))] { // Offset is just past the bad byte
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("truncated JSON: %w", err)
	}
	return err
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func (r *Registry) decode(path string, raw json.RawMessage, v reflect.Value) error {
	t := v.Type()
	if t == durationType {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("scenario: %s: want a duration with its unit, as \"45ms\" or \"1m30s\", got %s", path, raw)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("scenario: %s: %w", path, err)
		}
		v.SetInt(int64(d))
		return nil
	}
	if t.Kind() != reflect.Interface && implementsJSON(t) {
		if t.Kind() == reflect.Pointer {
			if isNull(raw) {
				v.SetZero()
				return nil
			}
			p := reflect.New(t.Elem())
			if err := p.Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
				return fmt.Errorf("scenario: %s: %w", path, err)
			}
			v.Set(p)
			return nil
		}
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return fmt.Errorf("scenario: %s: %w", path, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		if isNull(raw) {
			v.SetZero()
			return nil
		}
		return r.decodeKind(path, raw, v)
	case reflect.Pointer:
		if isNull(raw) {
			v.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := r.decode(path, raw, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		obj, err := object(path, raw)
		if err != nil {
			return err
		}
		return r.decodeFields(path, obj, v, "")
	case reflect.Slice:
		if isNull(raw) {
			v.SetZero()
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("scenario: %s: want an array, got %s", path, brief(raw))
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, it := range items {
			if err := r.decode(fmt.Sprintf("%s[%d]", path, i), it, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil || len(items) != t.Len() {
			return fmt.Errorf("scenario: %s: want an array of %d, got %s", path, t.Len(), brief(raw))
		}
		for i, it := range items {
			if err := r.decode(fmt.Sprintf("%s[%d]", path, i), it, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("scenario: %s: a map keyed by %v is not data", path, t.Key())
		}
		if isNull(raw) {
			v.SetZero()
			return nil
		}
		obj, err := object(path, raw)
		if err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, len(obj))
		for _, kv := range obj {
			e := reflect.New(t.Elem()).Elem()
			if err := r.decode(fmt.Sprintf("%s[%q]", path, kv.key), kv.raw, e); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(kv.key).Convert(t.Key()), e)
		}
		v.Set(m)
		return nil
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if isNull(raw) {
			return nil
		}
		return fmt.Errorf("scenario: %s is a %v: it cannot be read from data", path, t.Kind())
	}
	// Scalars: strict, exact.
	p := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(p.Interface()); err != nil {
		return fmt.Errorf("scenario: %s: want %v, got %s", path, kindWord(t), brief(raw))
	}
	v.Set(p.Elem())
	return nil
}

func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number >= 0"
	}
	return t.String()
}

// brief shows at most 40 bytes of a raw value.
func brief(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

type member struct {
	key string
	raw json.RawMessage
}

// object reads a JSON object's members in order, refusing duplicates.
func object(path string, raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '{' {
		return nil, fmt.Errorf("scenario: %s: want an object, got %s", path, brief(raw))
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("scenario: %s: %w", path, err)
		}
		key := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("scenario: %s.%s: %w", path, key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("scenario: %s.%s: given twice", path, key)
		}
		seen[key] = true
		out = append(out, member{key, val})
	}
	return out, nil
}

// decodeFields reads an object's members into a struct's exported
// fields; skip names a member already read (the kind).
func (r *Registry) decodeFields(path string, obj []member, v reflect.Value, skip string) error {
	t := v.Type()
	for _, m := range obj {
		if m.key == skip {
			continue
		}
		f, ok := t.FieldByName(m.key)
		if !ok || !f.IsExported() || len(f.Index) != 1 {
			return fmt.Errorf("scenario: %s.%s: unknown field of %v", path, m.key, t)
		}
		if err := r.decode(path+"."+m.key, m.raw, v.FieldByIndex(f.Index)); err != nil {
			return err
		}
	}
	return nil
}

// decodeKind reads a value of interface type from its kind and fields.
func (r *Registry) decodeKind(path string, raw json.RawMessage, v reflect.Value) error {
	it := v.Type()
	obj, err := object(path, raw)
	if err != nil {
		return err
	}
	var kind string
	var value json.RawMessage
	for _, m := range obj {
		switch m.key {
		case "kind":
			if err := json.Unmarshal(m.raw, &kind); err != nil {
				return fmt.Errorf("scenario: %s.kind: want a string, got %s", path, brief(m.raw))
			}
		case "value":
			value = m.raw
		}
	}
	k := r.ifaces[it]
	if kind == "" {
		return fmt.Errorf("scenario: %s: a %v needs its \"kind\" (registered: %s)", path, it, known(k))
	}
	ct, ok := reflect.Type(nil), false
	if k != nil {
		ct, ok = k.byName[kind]
	}
	if !ok {
		return fmt.Errorf("scenario: %s: %v kind %q is not registered (registered: %s)", path, it, kind, known(k))
	}
	if implementsJSON(ct) {
		if value == nil {
			return fmt.Errorf("scenario: %s: kind %q needs its \"value\"", path, kind)
		}
		for _, m := range obj {
			if m.key != "kind" && m.key != "value" {
				return fmt.Errorf("scenario: %s.%s: unknown field of kind %q (its data is under \"value\")", path, m.key, kind)
			}
		}
		// p points to a new value of the concrete type (for a pointer
		// kind, to a new value of its target).
		p := reflect.New(ct)
		if ct.Kind() == reflect.Pointer {
			p = reflect.New(ct.Elem())
		}
		if err := p.Interface().(json.Unmarshaler).UnmarshalJSON(value); err != nil {
			return fmt.Errorf("scenario: %s: %w", path, err)
		}
		if ct.Kind() == reflect.Pointer {
			v.Set(p)
		} else {
			v.Set(p.Elem())
		}
		return nil
	}
	st := ct
	if ct.Kind() == reflect.Pointer {
		st = ct.Elem()
	}
	p := reflect.New(st)
	if err := r.decodeFields(path, obj, p.Elem(), "kind"); err != nil {
		return err
	}
	if ct.Kind() == reflect.Pointer {
		v.Set(p)
	} else {
		v.Set(p.Elem())
	}
	return nil
}

func known(k *kinds) string {
	if k == nil {
		return "none"
	}
	return strings.Join(k.names(), ", ")
}
