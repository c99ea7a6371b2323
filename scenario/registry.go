package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Registry names the kinds of every interface-typed configuration field:
// the cost models (costmodel.Model), the waiting-queue policies
// (engine.Policy), the routers (sim.Router), the length distributions and
// their couplings (workload.Length, workload.Joint), the sweep workloads
// (analysis.Workload). A value of an interface type is written as an object
// whose "kind" names its concrete type, beside that type's own fields.
//
// Nothing registers itself: Default returns a registry of the built-in
// kinds, and a user's own kind joins with Register in the user's code. A
// Registry is not safe for concurrent registration; once filled, Marshal
// and Unmarshal may run concurrently.
type Registry struct {
	ifaces map[reflect.Type]*kinds
}

// kinds are the named concrete types of one interface.
type kinds struct {
	iface  reflect.Type
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

// New returns an empty registry: only kind-free configurations encode.
func New() *Registry { return &Registry{ifaces: map[reflect.Type]*kinds{}} }

// Register names example's concrete type as a kind of the interface I:
// Register[costmodel.Model](r, "frozen", costmodel.Frozen{}). The concrete
// type must be a struct or a pointer to one (its exported fields are the
// data); functions are not data and are refused, as are a name or a type
// registered twice for I.
func Register[I any](r *Registry, kind string, example I) error {
	it := reflect.TypeFor[I]()
	if it.Kind() != reflect.Interface {
		return fmt.Errorf("scenario: Register needs an interface type, got %v", it)
	}
	v := reflect.ValueOf(&example).Elem()
	if v.IsNil() {
		return fmt.Errorf("scenario: Register[%v](%q) needs a non-nil example", it, kind)
	}
	ct := v.Elem().Type()
	st := ct
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct && !implementsJSON(ct) {
		return fmt.Errorf("scenario: kind %q of %v is a %v (%v): only structs are data", kind, it, st.Kind(), ct)
	}
	if kind == "" || strings.ContainsAny(kind, " \t\n\"") {
		return fmt.Errorf("scenario: kind name %q of %v must be a non-empty word", kind, it)
	}
	k := r.ifaces[it]
	if k == nil {
		k = &kinds{iface: it, byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
		r.ifaces[it] = k
	}
	if t, dup := k.byName[kind]; dup {
		return fmt.Errorf("scenario: kind %q of %v is already %v", kind, it, t)
	}
	if n, dup := k.byType[ct]; dup {
		return fmt.Errorf("scenario: %v is already kind %q of %v", ct, n, it)
	}
	k.byName[kind], k.byType[ct] = ct, kind
	return nil
}

// MustRegister is Register for built-in tables, panicking on a
// programming error (a duplicate or a function).
func MustRegister[I any](r *Registry, kind string, example I) {
	if err := Register(r, kind, example); err != nil {
		panic(err)
	}
}

// Kinds lists the names registered for the interface I, sorted.
func Kinds[I any](r *Registry) []string {
	k := r.ifaces[reflect.TypeFor[I]()]
	if k == nil {
		return nil
	}
	return k.names()
}

func (k *kinds) names() []string {
	out := make([]string, 0, len(k.byName))
	for n := range k.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
