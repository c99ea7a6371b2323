package workload

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Streaming a trace keeps memory flat: the live heap after 300,000 rows is
// that after 50,000.
func TestTraceMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 300,000 rows")
	}
	tr, err := NewTrace(&azureRows{limit: 300000}, "generated.csv", Azure())
	require.NoError(t, err)
	var early uint64
	for i := range 300000 {
		_, err := tr.Next()
		require.NoError(t, err)
		if i == 50000 {
			early = liveHeap()
		}
	}
	late := liveHeap()
	assert.Less(t, int64(late)-int64(early), int64(64<<10), "live heap grew from %d to %d bytes", early, late)
}

// BenchmarkTraceStreaming streams a generated Azure trace of b.N rows and
// reports allocated bytes per request and the growth of the live heap
// (which stays near 0: memory is flat in the trace's length).
func BenchmarkTraceStreaming(b *testing.B) {
	before := liveHeap()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	tr, err := NewTrace(&azureRows{limit: b.N}, "generated.csv", Azure())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := tr.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N), "B/req")
	b.ReportMetric(float64(int64(liveHeap())-int64(before)), "live-heap-growth-B")
}
