package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestScheduleWritesEveryField holds schedule, which writes each of a
// reused slot's Record fields once, to a Record zeroed and then filled
// (its shape before): into a slot whose every field holds junk (a field
// added to Record and not written by schedule keeps it, and fails), the
// request's record is what Record{} with the request's fields is, its
// Tokens emptied with their array kept.
func TestScheduleWritesEveryField(t *testing.T) {
	t.Parallel()
	reqs := list{{ID: 1, Arrival: time.Second, InputTokens: 100, OutputTokens: 10}}
	r, err := newRunnerWith(Config{Window: Window{Warmup: 2 * time.Second}}, &reqs, nil, twins{})
	require.NoError(t, err)
	for i, measured := range []bool{false, true} {
		junk := junkRecord(t)
		ref := r.alloc()
		r.slots[ref].rec = junk
		r.freeRefs = append(r.freeRefs, ref)
		req := workload.Request{ID: 7 + uint64(i), Conversation: 3, Turn: 2, Class: "batch", Arrival: time.Duration(1+2*i) * time.Second,
			InputTokens: 321, OutputTokens: 45}
		require.NoError(t, r.schedule(&req))
		require.Equal(t, ref, r.lastRef)
		want := Record{ID: req.ID, Conversation: 3, Turn: 2, Class: "batch", Scheduled: req.Arrival, Arrival: req.Arrival,
			Input: 321, Output: 45, Measured: measured,
			FirstScheduled: Never, FirstToken: Never, LastToken: Never, Finish: Never, Tokens: junk.Tokens[:0]}
		got := r.slots[ref].rec
		require.Equal(t, want, got)
		require.Equal(t, cap(junk.Tokens), cap(got.Tokens), "the tokens' array is kept")
		require.Same(t, &junk.Tokens[:1][0], &got.Tokens[:1][0], "the tokens' array is kept")
	}
}

// junkRecord is a Record whose every field is set, none to its zero.
func junkRecord(t *testing.T) Record {
	t.Helper()
	var rec Record
	v := reflect.ValueOf(&rec).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(int64(100 + i))
		case reflect.Uint64, reflect.Uint32, reflect.Uint8:
			f.SetUint(uint64(100 + i))
		case reflect.String:
			f.SetString("junk")
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 3, 8))
		default:
			t.Fatalf("Record.%s: a %v this test cannot fill", v.Type().Field(i).Name, f.Kind())
		}
		require.False(t, f.IsZero(), "Record.%s", v.Type().Field(i).Name)
	}
	return rec
}
