package cputime_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servesim/servesim/internal/cputime"
)

// CPU time only grows, and busy work shows in it.
func TestUsedGrows(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no getrusage")
	}
	before := cputime.Used()
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	after := cputime.Used()
	assert.Positive(t, x)
	assert.Greater(t, after, before)
}

// A cost measured in CPU time: the work between two readings.
func ExampleUsed() {
	start := cputime.Used()
	spent := cputime.Used() - start
	fmt.Println(spent >= 0)
	// Output: true
}
