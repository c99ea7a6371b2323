package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkBenchFormat checks every line of out against the benchmark data
// format by hand (golang.org/x/perf/benchfmt is not a dependency): a
// result line has an even number of at least four fields, a name that
// begins with Benchmark, an integer iteration count and value-unit pairs
// whose values strconv.ParseFloat reads; a configuration line is
// "key: value" with a key free of spaces and upper case; a unit line is
// "Unit unit key=value...". It returns the result lines' fields.
func checkBenchFormat(t *testing.T, out string) (results [][]string, config []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			require.GreaterOrEqual(t, len(f), 4, line)
			require.Zero(t, len(f)%2, "even number of fields: %s", line)
			_, err := strconv.Atoi(f[1])
			require.NoError(t, err, "iterations: %s", line)
			for i := 2; i < len(f); i += 2 {
				_, err := strconv.ParseFloat(f[i], 64)
				require.NoError(t, err, "value %q: %s", f[i], line)
			}
			results = append(results, f)
		case strings.HasPrefix(line, "Unit "):
			require.GreaterOrEqual(t, len(f), 3, line)
			for _, kv := range f[2:] {
				assert.Contains(t, kv, "=", line)
			}
		default:
			key, _, ok := strings.Cut(line, ": ")
			require.True(t, ok, "neither result, unit nor configuration line: %q", line)
			assert.Equal(t, -1, strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsUpper(r) }), line)
			config = append(config, line)
		}
	}
	return results, config
}

func TestBenchLinesFollowTheFormat(t *testing.T) {
	c := smallCurve(t)
	var buf bytes.Buffer
	require.NoError(t, Bench{Config: "baseline chunk=2048"}.Write(&buf, c))
	results, config := checkBenchFormat(t, buf.String())
	assert.Equal(t, []string{"config: baseline chunk=2048"}, config)

	n := 0
	for _, p := range c.Points {
		for i, s := range p.Runs {
			f := results[n]
			n++
			assert.Equal(t, "BenchmarkGoodput/load="+strconv.FormatFloat(p.Load, 'g', -1, 64)+"-1", f[0])
			assert.Equal(t, "goodput-req/s", f[3])
			assert.InDelta(t, s.Goodput, mustFloat(t, f[2]), 1e-5*s.Goodput+1e-12, "load %v run %d", p.Load, i)
			assert.Equal(t, "attainment", f[5])
			assert.InDelta(t, s.Attainment, mustFloat(t, f[4]), 1e-5)
		}
	}
	assert.Len(t, results, n, "one line per replication per load")
	assert.Equal(t, 6, n)
}

func TestBenchRefusesNamesWithSpaces(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, Bench{Name: "Atlas TP4"}.Write(&buf, smallCurve(t)))
	assert.Error(t, Bench{Config: "a\nb"}.Write(&buf, smallCurve(t)))
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}
