package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
)

// writeTrace writes a trace file in a test's directory.
func writeTrace(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// Issue 32: a trace whose rows share one instant printed "own pace
// 0.00 req/s" and "scaled to 1 req/s" rows equal to the own pace (goodput
// above the offered load). It has no span to scale: the own-pace row has
// no rate, no scaled replay runs, and the report says why.
func TestRunZeroSpanTraceIsNotScaled(t *testing.T) {
	path := writeTrace(t, "same.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"+strings.Repeat("2023-11-16 18:15:46.6805900,374,44\n", 5))
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-trace", path, "-rates", "1,2"}))
	s := out.String()
	assert.Contains(t, s, "window     whole trace: 5 requests over 0s, all at one instant, mean 374 in / 44 out tokens, 0 failed\n")
	assert.Regexp(t, `\nown pace +- +5 +5 +1\.000 `, s)
	assert.NotContains(t, s, "scaled to")
	assert.NotContains(t, s, "0.00 req/s")
	assert.True(t, strings.HasSuffix(s, "\nthe trace's 5 requests share one instant: it has no span, so no pace of its own to scale; no scaled replay ran (-rates needs a trace whose rows span some time)\n"), s)

	// A window holding one request is the same case.
	out.Reset()
	require.NoError(t, run(&out, []string{"-trace", filepath.Join("testdata", "azure_conv_sample.csv"), "-window", "1ns"}))
	assert.Contains(t, out.String(), "window     first 1ns of the trace: 1 requests over 0s, all at one instant,")
	assert.True(t, strings.HasSuffix(out.String(), "\nthe trace holds one request: it has no span, so no pace of its own to scale; no scaled replay ran (-rates needs a trace whose rows span some time)\n"), out.String())
}

// Issue 32: -keep-conversations on a trace without a conversation column
// ran silently as a timestamp replay. It is refused: for a format that has
// no such column, and for a file whose column is absent or empty.
func TestRunKeepConversationsNeedsAConversationColumn(t *testing.T) {
	azure := filepath.Join("testdata", "azure_conv_sample.csv")
	err := run(&bytes.Buffer{}, []string{"-trace", azure, "-keep-conversations"})
	assert.EqualError(t, err, "-keep-conversations: -format azure has no conversation column, so there are no conversations to keep (the generic form's conversation column and BurstGPT's Session ID are)")

	generic := writeTrace(t, "noconv.csv", "id,arrival_ns,input_tokens,output_tokens\n0,0,100,10\n1,1000000000,100,10\n")
	for _, args := range [][]string{{"-trace", generic}, {"-trace", generic, "-format", "generic"}} {
		var out bytes.Buffer
		err = run(&out, append(args, "-keep-conversations"))
		assert.EqualError(t, err, "-keep-conversations: "+generic+` has no conversation column ("conversation"), or it is empty on every row: there are no conversations to keep`)
		assert.Zero(t, out.Len())
	}
	// The same file replays by timestamp.
	require.NoError(t, run(&bytes.Buffer{}, []string{"-trace", generic, "-rates", "1"}))
}

// Issue 32: -rates 1e9 printed "below 95 % already at 1000000000.00
// req/s, the lowest load replayed" though the own-pace replay, at a lower
// load, met the target. The knee now reads every replay, the own pace
// included, in increasing load, and names which is which.
func TestKneeCountsTheOwnPaceReplay(t *testing.T) {
	met := sim.Summary{Offered: 10, Good: 10, Attainment: 1}
	missed := sim.Summary{Offered: 10, Good: 5, Attainment: 0.5}
	own := point{label: ownPace, rate: 4.71, sum: met}
	assert.Equal(t, "attainment falls below 95% between 4.71 req/s (own pace, 1.000) and 1000000000.00 req/s (0.500)",
		knee([]point{own, {label: "scaled to 1e+09/s", rate: 1e9, sum: missed}}, 0.95))
	assert.Equal(t, "attainment is below 95% already at 1.00 req/s (0.500), the lowest load replayed",
		knee([]point{own, {rate: 3, sum: met}, {rate: 1, sum: missed}}, 0.95), "in load order, not the order of -rates")
	assert.Equal(t, "attainment stays at or above 95% up to 4.71 req/s (own pace, 1.000), the highest load replayed",
		knee([]point{own, {rate: 2, sum: met}}, 0.95))

	// Through run: the sample at its own pace (4.71 req/s) misses the
	// target, and is the lowest load replayed beside 1e9 req/s.
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-trace", filepath.Join("testdata", "azure_conv_sample.csv"), "-rates", "1e9"}))
	assert.True(t, strings.HasSuffix(out.String(), "\nattainment is below 95% already at 4.71 req/s (own pace, 0.051), the lowest load replayed\n"), out.String())
}

// Issue 32: the generic form without -format failed with a header error
// and no hint. Its header is recognised and the report says so; with a
// -format that does not fit, the error names the one that does.
func TestRunReadsTheFormatFromTheHeader(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-trace", conversationSample, "-rates", "1"}))
	assert.True(t, strings.HasPrefix(out.String(), "trace      conversations.csv (-format generic, read from its header)\n"), out.String())

	err := run(&bytes.Buffer{}, []string{"-trace", conversationSample, "-format", "azure"})
	assert.EqualError(t, err, `workload: `+conversationSample+`:1: field TIMESTAMP: "id,arrival_ns,input_tokens,output_tokens,conversation,turn,class,priority,failed,prefix_block_tokens,prefix_hashes" is a header without this column (the header is that of -format generic: try -format generic)`)

	unknown := writeTrace(t, "unknown.csv", "when,in,out\n1,2,3\n")
	err = run(&bytes.Buffer{}, []string{"-trace", unknown})
	assert.EqualError(t, err, `workload: `+unknown+`:1: field TIMESTAMP: "when,in,out" is a header without this column (-format azure; the formats are azure, mooncake, burstgpt, generic)`)

	// The generic form as JSON Lines is recognised too.
	jsonl := writeTrace(t, "generic.jsonl", `{"id":0,"arrival_ns":0,"input_tokens":100,"output_tokens":10}`+"\n"+`{"id":1,"arrival_ns":1000000000,"input_tokens":100,"output_tokens":10}`+"\n")
	out.Reset()
	require.NoError(t, run(&out, []string{"-trace", jsonl, "-rates", "1"}))
	assert.Contains(t, out.String(), "trace      generic.jsonl (-format generic, read from its header)\n")
	assert.Contains(t, out.String(), "whole trace: 2 requests over 1s, 2.00 req/s")
}
