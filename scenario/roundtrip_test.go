package scenario

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// configTypes are the configuration types a scenario holds.
var configTypes = []any{
	sim.Config{}, engine.Config{}, sim.SLO{}, sim.Window{}, sim.Class{}, sim.Fleet{}, sim.PrefillPool{}, sim.HostTier{}, sim.SharedStore{}, sim.Link{}, sim.Speculation{}, analysis.
		Sweep{}, analysis.Experiment{}, analysis.DialSweep{}, analysis.ModelError{}, costmodel.NamedModel{}, costmodel.Frozen{}, costmodel.Linear{}, costmodel.Roofline{}, costmodel.Scaled{}, costmodel.Drafting{},
	workload.Synthetic{}, workload.Clients{}, workload.Conversations{}, workload.TraceConfig{},
}

// filler draws random values of any configuration type, interface fields
// from the registry's kinds.
type filler struct {
	r   *Registry
	rng *rand.Rand
}

func (f *filler) fill(v reflect.Value, depth int) {
	t := v.Type()
	if !v.CanSet() {
		return
	}
	if f.rng.IntN(4) == 0 { // a quarter of the fields stay zero
		return
	}
	switch t {
	case durationType:
		v.SetInt(f.rng.Int64N(int64(1000*time.Hour)) - int64(time.Hour))
		return
	case reflect.TypeFor[analysis.Metric]():
		ms := []analysis.Metric{analysis.MetricGoodput, analysis.MetricKnee, analysis.MetricTTFTP99, analysis.MetricClassAttainment("chat")}
		v.Set(reflect.ValueOf(ms[f.rng.IntN(len(ms))]))
		return
	case reflect.TypeFor[analysis.Dial]():
		ds := []analysis.Dial{analysis.DialChunkCap, analysis.DialTokenBudget, analysis.DialDecodeStep, analysis.DialPrefillReplicas(4)}
		v.Set(reflect.ValueOf(ds[f.rng.IntN(len(ds))]))
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.rng.Int64N(2000) - 100)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(f.rng.Uint64N(1 << 8))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(f.rng.NormFloat64() * 100)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d \"é\"", f.rng.IntN(100)))
	case reflect.Slice:
		if depth > 4 {
			return
		}
		n := f.rng.IntN(3)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 4 {
			return
		}
		m := reflect.MakeMap(t)
		for range f.rng.IntN(3) {
			k := reflect.New(t.Key()).Elem()
			k.SetString(fmt.Sprintf("k%d", f.rng.IntN(10)))
			e := reflect.New(t.Elem()).Elem()
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		p := reflect.New(t.Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		k := f.r.ifaces[t]
		if k == nil || depth > 4 {
			return
		}
		names := k.names()
		ct := k.byName[names[f.rng.IntN(len(names))]]
		if ct == reflect.TypeFor[*costmodel.TableModel]() {
			m, err := costmodel.Table{Decode: []costmodel.TablePoint{{X: 1, Ms: 10 + f.rng.Float64()}}, Prefill: []costmodel.TablePoint{{X: 0, Ms: 5}, {X: 100, Ms: 9}}}.Build()
			if err != nil {
				panic(err)
			}
			v.Set(reflect.ValueOf(m))
			return
		}
		p := reflect.New(ct)
		f.fill(p.Elem(), depth+1)
		v.Set(p.Elem())
	}
}

// equal is reflect.DeepEqual, except that functions are equal when they
// are the same function (a built-in metric's Of, a dial's setter).
func equal(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	switch a.Kind() {
	case reflect.Func:
		return a.IsNil() == b.IsNil() && (a.IsNil() || a.Pointer() == b.Pointer())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equal(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !equal(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !equal(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !equal(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	}
	panic("equal: " + a.Kind().String())
}

// Every configuration type survives the trip through JSON unchanged, for
// random values (interface fields of every registered kind, nested), and
// is written the same twice.
func TestRoundTripIsIdentity(t *testing.T) {
	r := Default()
	for _, proto := range configTypes {
		typ := reflect.TypeOf(proto)
		t.Run(typ.String(), func(t *testing.T) {
			f := &filler{r: r, rng: rand.New(rand.NewPCG(1, uint64(len(typ.String()))))}
			for i := range 300 {
				v := reflect.New(typ)
				f.fill(v.Elem(), 0)
				b, err := r.Marshal(v.Interface())
				require.NoError(t, err, "case %d: %+v", i, v.Elem())
				back := reflect.New(typ)
				require.NoError(t, r.Unmarshal(b, back.Interface()), "case %d:\n%s", i, b)
				require.True(t, equal(v.Elem(), back.Elem()), "case %d:\n%s\nwant %+v\ngot  %+v", i, b, v.Elem(), back.Elem())
				again, err := r.Marshal(back.Interface())
				require.NoError(t, err)
				require.Equal(t, string(b), string(again))
			}
		})
	}
}

// An experiment's model band (±scale and the Atlas shapes, by name)
// survives the trip through JSON.
func TestExperimentBandRoundTrips(t *testing.T) {
	r := Default()
	x := analysis.Experiment{Hypothesis: analysis.Hypothesis{Metric: analysis.MetricKnee, Threshold: 0.05},
		Loads: []float64{1, 2}, ModelError: analysis.AtlasBand(0.1)}
	x.ModelError.Reps = 4
	b, err := r.Marshal(x)
	require.NoError(t, err)
	require.Contains(t, string(b), `"atlas-linear"`)
	var back analysis.Experiment
	require.NoError(t, r.Unmarshal(b, &back))
	require.True(t, equal(reflect.ValueOf(x), reflect.ValueOf(back)), "%s", b)
	require.Equal(t, x.ModelError.String(), back.ModelError.String())
}
