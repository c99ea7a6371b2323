//go:build linux

package workload

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTemplateReadsStayInLine: a replay's template (skimmer.line with
// ids, and the compares, counts and lists it reads through words24.at,
// flatArray and countUp, which load 8 bytes at a time through pointers
// without bounds checks) reads no byte past its line. Each line, and
// every prefix of it, is placed at the very end of a page whose next
// page is unreadable: a read past its end faults, and the test dies.
// The results are the template's on the same bytes in an ordinary slice.
func TestTemplateReadsStayInLine(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.NoError(t, syscall.Mprotect(mem[page:], syscall.PROT_NONE))
	head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"
	p := parser{name: "f", cfg: Mooncake(0)}
	j := newJSONRows(strings.NewReader(head), "f")
	j.skim = &skimmer{p: &p, ids: true}
	_, err = j.next()
	require.NoError(t, err)
	s := j.skim
	require.True(t, s.ready, "the template learnt")
	var lines []string
	for _, start := range []int{0, 7, 95, 990, 12345, 99990} {
		for _, n := range []int{0, 1, 2, 9, 11, 25} {
			var ids []string
			for x := start; x < start+n; x++ {
				ids = append(ids, fmt.Sprint(x))
			}
			for _, in := range []int{5, 1234567, 12345678} {
				lines = append(lines, fmt.Sprintf(`{"timestamp": %d, "input_length": %d, "output_length": 1234567, "hash_ids": [%s]}`, start*3, in, strings.Join(ids, ", ")))
			}
		}
	}
	for _, line := range lines {
		for l := 0; l <= len(line); l++ {
			text := mem[page-l : page]
			copy(text, line[:l])
			want := []byte(line[:l])
			raw, ok := s.line(want)
			wantIn, wantOut, wantIDs, wantRuns := s.in, s.out, append([]uint64(nil), s.ints...), s.runs
			gotRaw, gotOK := s.line(text)
			require.Equal(t, ok, gotOK, "%q", line[:l])
			require.True(t, ok || l < len(line), "the template takes %q", line)
			if ok {
				require.Equal(t, raw, gotRaw, "%q", line[:l])
				require.Equal(t, [2]int{wantIn, wantOut}, [2]int{s.in, s.out}, "%q", line[:l])
				require.Equal(t, wantIDs, append([]uint64(nil), s.ints...), "%q", line[:l])
				require.Equal(t, wantRuns, s.runs, "%q", line[:l])
			}
		}
	}
}
