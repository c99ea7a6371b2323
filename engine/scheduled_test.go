package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
)

// A prompt of 600 tokens chunked by 256 beside a second request of 100:
// every step's scheduled requests, in order, with their tokens and what
// they had computed before.
func TestScheduledHandBuilt(t *testing.T) {
	e, err := engine.New(engine.Config{ChunkCap: 256}, costmodel.Frozen{})
	require.NoError(t, err)
	_, ok := e.Scheduled(nil)
	require.False(t, ok, "no step in flight")
	require.NoError(t, e.Add(0, engine.Request{Ref: 1, Input: 600, Output: 2}))
	require.NoError(t, e.Add(0, engine.Request{Ref: 2, Input: 100, Output: 2}))
	var got []string
	var now time.Duration
	buf := make([]engine.Scheduled, 0, 8)
	for {
		plan, err := e.Schedule(now)
		require.NoError(t, err)
		if plan == nil {
			break
		}
		var ok bool
		buf, ok = e.Scheduled(buf[:0])
		require.True(t, ok)
		line := ""
		for _, s := range buf {
			line += fmt.Sprintf("%d:%d@%d,%v ", s.Ref, s.Tokens, s.Computed, s.Decode)
		}
		got = append(got, line)
		_, err = e.Complete(plan.End)
		require.NoError(t, err)
		now = plan.End
	}
	require.Equal(t, []string{
		"1:256@0,false 2:100@0,false ",  // two prefills, the first chunked
		"1:256@256,false 2:1@100,true ", // a chunk beside a decode
		"1:88@512,false ",               // the last chunk; 2 is done
		"1:1@600,true ",                 // the decode
	}, got)
}

// Name the requests of each step.
func ExampleEngine_Scheduled() {
	e, _ := engine.New(engine.Config{ChunkCap: 256}, costmodel.Frozen{})
	_ = e.Add(0, engine.Request{Ref: 7, Input: 300, Output: 2})
	var now time.Duration
	var buf []engine.Scheduled
	for {
		plan, err := e.Schedule(now)
		if err != nil || plan == nil {
			break
		}
		buf, _ = e.Scheduled(buf[:0])
		for _, s := range buf {
			fmt.Printf("request %d: %d tokens after %d computed, decode %v\n", s.Ref, s.Tokens, s.Computed, s.Decode)
		}
		_, _ = e.Complete(plan.End)
		now = plan.End
	}
	// Output:
	// request 7: 256 tokens after 0 computed, decode false
	// request 7: 44 tokens after 256 computed, decode false
	// request 7: 1 tokens after 300 computed, decode true
}
