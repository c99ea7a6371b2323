package sim

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/require"
)

// scribbler records the request each arrival is routed with, then, if
// scribble, writes every field of it over (a router may), so the next
// arrival's shows whether route wrote each field again.
type scribbler struct {
	t        *testing.T
	seen     *[]workload.Request
	scribble bool
}

func (s scribbler) Route(r *workload.Request, v *View) int {
	c := *r
	c.PrefixHashes = slices.Clone(r.PrefixHashes)
	*s.seen = append(*s.seen, c)
	i := int(r.ID % uint64(v.Replicas()))
	if s.scribble {
		x := reflect.ValueOf(r).Elem()
		for k := range x.NumField() {
			f := x.Field(k)
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int, reflect.Int64:
				f.SetInt(-7)
			case reflect.Uint64:
				f.SetUint(77)
			case reflect.String:
				f.SetString("scribbled")
			case reflect.Slice:
				f.Set(reflect.ValueOf([]uint64{1, 2, 3}))
			case reflect.Struct: // ascend.Promise: its unexported bools all set
				b := unsafe.Slice((*byte)(unsafe.Pointer(f.UnsafeAddr())), f.Type().Size())
				for j := range b {
					b[j] = 1
				}
			default:
				// A field route must write: set it to something else
				// (a new kind needs a case here).
				s.t.Fatalf("field %s of kind %s: no case to write it over", x.Type().Field(k).Name, f.Kind())
			}
		}
	}
	return i
}

// TestRouteWritesEveryField holds route, which writes the reused
// request's fields one by one, to a request built anew: a router that
// writes every field over sees each arrival as one that does not.
func TestRouteWritesEveryField(t *testing.T) {
	t.Parallel()
	run := func(scribble bool) []workload.Request {
		var seen []workload.Request
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: 3, Count: 60, Arrival: workload.Arrival{Rate: 8},
			Lengths: workload.Fixed(500, 50), Prefix: workload.FleetHighReuse, Class: "c"})
		require.NoError(t, err)
		_, err = Run(Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: scribbler{t, &seen, scribble}}}, g, nil)
		require.NoError(t, err)
		return seen
	}
	want, got := run(false), run(true)
	require.Len(t, got, 60)
	require.Equal(t, want, got)
}
