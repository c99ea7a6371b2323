package sim

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
)

// WithDefaults keeps every field of every replica: it rebuilt each as
// ReplicaConfig{Engine, Model} and dropped its Speculation, so a card described
// a fleet that did not speculate. Every field of ReplicaConfig is set here by
// reflection, so a field added later is covered without touching the
// test (an interface-typed one needs a value in fillers).
func TestWithDefaultsKeepsEveryReplicaField(t *testing.T) {
	var in ReplicaConfig
	fill(t, reflect.ValueOf(&in).Elem(), "Replica")
	for i := range reflect.TypeFor[ReplicaConfig]().NumField() {
		f := reflect.TypeFor[ReplicaConfig]().Field(i)
		require.False(t, reflect.ValueOf(in).Field(i).IsZero(), "Replica.%s was not filled", f.Name)
	}
	out := Config{Fleet: Fleet{Replicas: []ReplicaConfig{in, in}}}.WithDefaults()
	require.Len(t, out.Fleet.Replicas, 2)
	for _, got := range out.Fleet.Replicas {
		for i := range reflect.TypeFor[ReplicaConfig]().NumField() {
			name := reflect.TypeFor[ReplicaConfig]().Field(i).Name
			assert.Equal(t, reflect.ValueOf(in).Field(i).Interface(), reflect.ValueOf(got).Field(i).Interface(), "Replica.%s", name)
		}
	}
	// The input's own slice is not written.
	out.Fleet.Replicas[0].Speculation.Tokens++
	assert.NotEqual(t, in.Speculation.Tokens, out.Fleet.Replicas[0].Speculation.Tokens)

	// And the defaults are still filled in beside them.
	bare := Config{Fleet: Fleet{Replicas: []ReplicaConfig{{Speculation: Speculation{Tokens: 3, Acceptance: 0.7}}}}}.WithDefaults()
	r := bare.Fleet.Replicas[0]
	assert.Equal(t, Speculation{Tokens: 3, Acceptance: 0.7}, r.Speculation)
	assert.Equal(t, engine.Config{}.WithDefaults(), r.Engine)
	assert.Equal(t, costmodel.Frozen{}.WithDefaults(), r.Model)
}

// fillers are the values fill gives interface-typed fields: non-nil, and
// left as they are by their WithDefaults.
var fillers = map[reflect.Type]any{
	reflect.TypeFor[costmodel.Model](): costmodel.Linear{PerStep: 7, PerDecodeToken: 0.5},
	reflect.TypeFor[engine.Policy]():   engine.ShortestPrompt{},
}

// fill sets v and everything in it to non-zero values.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.25)
	case reflect.String:
		v.SetString("x")
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(t, v.Index(i), path+"[i]")
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+"[key]")
		fill(t, e, path+"[k]")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Interface:
		x, ok := fillers[v.Type()]
		require.True(t, ok, "%s: no filler for interface %v; add one to fillers", path, v.Type())
		v.Set(reflect.ValueOf(x))
	default:
		t.Fatalf("%s: cannot fill a %v", path, v.Kind())
	}
}
