// Package sharedtraces finds the real request traces that tests replay
// from ../shared/traces beside the repository root (the Azure and Mooncake
// traces, too large to ship; a clone from a code host has no ../shared),
// skips a test that needs a missing one, and has the package's TestMain
// say so in one line:
//
//	func TestMain(m *testing.M) { sharedtraces.Main(m) }
//
//	path := sharedtraces.Path(t, "AzureLLMInferenceTrace_conv.csv") // or t.Skip
//	path, ok := sharedtraces.Optional(f, name)                      // a test's extra inputs (a fuzz test's seeds)
//
// Every test in the repository that reads ../shared goes through Path or
// Optional, and every package that does has this TestMain
// (TestEveryTestFindsSharedDataHere holds both). Only the traces are read:
// examples/validate's tests replay the copy of ../shared/measured in its
// testdata, and no test reads DESIGN.md or vllm-diff.
//
// # What a clone without ../shared shows
//
// Plain `go test ./...` shows nothing a passing package prints: neither
// its skipped tests' messages nor what TestMain writes to its standard
// output or error (go test collects both and drops them on success). So
// that a checkout without the traces does not pass silently on fewer
// tests, Main writes its note, when the run is not verbose, to the first
// of these it can open:
//
//  1. the go command's own standard error (on Linux, /proc/<parent>/fd/2,
//     when the parent is `go test` and that is a pipe or a terminal: a
//     CI log, `go test ./... 2>&1 | tail`, a terminal); a regular file is
//     left alone, as a second writer at its own offset could overwrite
//     what go writes there or be overwritten (.ci/run makes its output
//     pipes for this, wherever CI sends it);
//  2. the terminal, /dev/tty;
//  3. its standard output, which go test shows with -v or -json, and for
//     a failing package.
//
// With -v or -json the note goes to standard output only (it is shown
// there). One line per package that skipped, printed as the package
// finishes (so it may come before that package's ok line), e.g.
//
//	note: workload: ../shared/traces (the real Azure and Mooncake traces) is not beside the repository: 7 tests skipped (TestA, TestB, TestC and 4 more), 2 tests ran without its real-trace inputs (FuzzAzure, FuzzMooncake); go test -v ./workload | grep SKIP lists them
//
// A cached result replays no output: rerun with -count=1 to see the note
// again.
package sharedtraces

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// absent records what went without a trace: the tests that skipped, the
// tests that ran with less (Optional), and the trace files missing.
var absent struct {
	sync.Mutex
	skipped, reduced, files []string
}

// Dir is ../shared/traces beside the root of the module that contains the
// working directory (a test runs in its package's directory).
func Dir() string {
	root := moduleRoot()
	return filepath.Join(root, "..", "shared", "traces")
}

// Path returns the path of the trace name in Dir, or skips t, recording
// its name for Main's note, when the file is missing.
func Path(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(Dir(), name)
	if _, err := os.Stat(path); err != nil {
		record(&absent.skipped, t.Name(), name)
		t.Skipf("real trace %s not available (%v): this test needs ../shared/traces beside the repository", path, err)
	}
	return path
}

// Optional returns the path of the trace name in Dir and true, or "" and
// false when it is missing, recording that t ran without it (a test
// that has inputs of its own besides, such as a fuzz test
// whose seed corpus takes a few rows of a real trace when there is one).
func Optional(t testing.TB, name string) (string, bool) {
	t.Helper()
	path := filepath.Join(Dir(), name)
	if _, err := os.Stat(path); err != nil {
		record(&absent.reduced, t.Name(), name)
		return "", false
	}
	return path, true
}

// record notes that test went without the trace file.
func record(tests *[]string, test, file string) {
	absent.Lock()
	defer absent.Unlock()
	if !slices.Contains(*tests, test) {
		*tests = append(*tests, test)
	}
	if !slices.Contains(absent.files, file) {
		absent.files = append(absent.files, file)
	}
}

// Main runs the package's tests, prints the note (see the package doc)
// when any of them went without a shared trace, and exits with the tests'
// code.
func Main(m *testing.M) {
	code := m.Run()
	if line := Note(); line != "" {
		show(line)
	}
	os.Exit(code)
}

// listed is how many test names the note lists before "and N more".
const listed = 3

// Note is the one line Main prints, or "" when no test went without a
// trace.
func Note() string {
	absent.Lock()
	skipped, reduced, files := slices.Clone(absent.skipped), slices.Clone(absent.reduced), slices.Clone(absent.files)
	absent.Unlock()
	if len(skipped) == 0 && len(reduced) == 0 {
		return ""
	}
	rel := filepath.Join("..", "shared", "traces")
	what := fmt.Sprintf("%s (the real Azure and Mooncake traces) is not beside the repository", rel)
	if _, err := os.Stat(Dir()); err == nil {
		slices.Sort(files)
		what = fmt.Sprintf("%s lacks %s", rel, strings.Join(files, ", "))
	}
	var parts []string
	if n := len(skipped); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s skipped (%s)", n, plural(n, "test"), names(skipped)))
	}
	if n := len(reduced); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s ran without its real-trace inputs (%s)", n, plural(n, "test"), names(reduced)))
	}
	pkg := packagePath()
	line := fmt.Sprintf("note: %s: %s: %s", pkg, what, strings.Join(parts, ", "))
	if len(skipped) > 0 {
		line += fmt.Sprintf("; go test -v ./%s | grep SKIP lists them", pkg)
	}
	return line
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// names lists up to listed test names, and how many more there are.
func names(tests []string) string {
	if len(tests) <= listed {
		return strings.Join(tests, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tests[:listed], ", "), len(tests)-listed)
}

// show writes line where the person running the tests sees it (see the
// package doc).
func show(line string) {
	if !testing.Verbose() {
		for _, path := range []string{goStderr(os.Getppid()), "/dev/tty"} {
			if path != "" && writeLine(path, line) == nil {
				return
			}
		}
	}
	fmt.Println(line)
}

// writeLine appends line to the file at path, in one write.
func writeLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// goStderr is a path that opens the standard error of the go command
// running this test binary, parent, when it is `go test` and its standard
// error is a pipe or a terminal; "" otherwise, or off Linux.
func goStderr(parent int) string {
	if runtime.GOOS != "linux" || parent <= 1 || !isGoTest(parent) {
		return ""
	}
	path := fmt.Sprintf("/proc/%d/fd/2", parent)
	info, err := os.Stat(path) // what the descriptor refers to
	if err != nil {
		return ""
	}
	if m := info.Mode(); m&os.ModeNamedPipe != 0 || m&os.ModeCharDevice != 0 {
		return path
	}
	return ""
}

// isGoTest reports whether process pid is the go command running tests.
func isGoTest(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	return len(args) > 1 && filepath.Base(args[0]) == "go" && slices.Contains(args[1:], "test")
}

// moduleRoot is the nearest directory at or above the working directory
// holding a go.mod; the working directory if none does.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// packagePath is the working directory relative to the module root:
// the package under test, as go test ./... names it.
func packagePath() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	rel, err := filepath.Rel(moduleRoot(), wd)
	if err != nil {
		return wd
	}
	return filepath.ToSlash(rel)
}
