package costmodeltest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

func TestCheckAcceptsAWellBehavedFunc(t *testing.T) {
	m := costmodel.Func(func(b costmodel.Batch) time.Duration {
		if b.Empty() {
			return 0
		}
		return time.Millisecond + time.Duration(b.Tokens()+b.DecodeContext())*time.Microsecond
	})
	require.NoError(t, costmodeltest.Check(m))
}

// Each broken model must be caught, and the error must say which rule broke.
func TestCheckCatchesBrokenModels(t *testing.T) {
	calls := 0
	for _, tc := range []struct {
		name string
		m    costmodel.Func
		want string
	}{
		{"cost falls as context grows", func(b costmodel.Batch) time.Duration {
			if b.Empty() {
				return 0
			}
			return time.Second - time.Duration(b.DecodeContext())*time.Microsecond/10
		}, "lowered the cost"},
		{"empty batch not free", func(costmodel.Batch) time.Duration { return time.Millisecond }, "the empty batch"},
		{"non-empty batch free", func(costmodel.Batch) time.Duration { return 0 }, "want > 0"},
		{"not deterministic", func(b costmodel.Batch) time.Duration {
			if b.Empty() {
				return 0
			}
			calls++
			return time.Duration(calls) * time.Hour
		}, "not deterministic"},
		{"panics", func(b costmodel.Batch) time.Duration { return time.Duration(b.Decode[0]) }, "panicked"},
		{"modifies the batch", func(b costmodel.Batch) time.Duration {
			if len(b.Decode) > 0 {
				b.Decode[0] = -1
			}
			return time.Second
		}, "modified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, costmodeltest.Check(tc.m), tc.want)
		})
	}
}
