// Package sharedtraces finds the real request traces that tests replay
// from ../shared/traces beside the repository root (the Azure and Mooncake
// traces, too large to ship), skips a test that needs a missing one, and
// has the package's TestMain say so in one line:
//
//	func TestMain(m *testing.M) { sharedtraces.Main(m) }
//
//	path := sharedtraces.Path(t, "AzureLLMInferenceTrace_conv.csv") // or t.Skip
//
// The note matters because plain `go test ./...` shows nothing a passing
// package prints — neither its skipped tests' messages nor what TestMain
// writes to standard output or error — so a checkout without the traces
// would pass silently on fewer tests. Main therefore writes the note to
// the terminal (/dev/tty) when there is one and the run is not verbose,
// and to standard output otherwise (shown by go test -v and -json, and in
// a failing package's output). A cached result replays no output: rerun
// with -count=1 to see the note again.
package sharedtraces

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// skipped are the tests that skipped for want of a trace, by name.
var skipped struct {
	sync.Mutex
	tests []string
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
		skipped.Lock()
		skipped.tests = append(skipped.tests, t.Name())
		skipped.Unlock()
		t.Skipf("real trace %s not available (%v): this test needs ../shared/traces beside the repository", path, err)
	}
	return path
}

// Main runs the package's tests, prints the note (see the package doc)
// when any of them skipped for want of a shared trace, and exits with the
// tests' code. A package whose tests skip without calling Path gets a
// note too when Dir is missing and no -run pattern chose the tests.
func Main(m *testing.M) {
	code := m.Run()
	if line := Note(); line != "" {
		show(line)
	}
	os.Exit(code)
}

// Note is the one line Main prints, or "" when nothing was skipped for
// want of a trace.
func Note() string {
	skipped.Lock()
	tests := skipped.tests
	skipped.Unlock()
	pkg := packagePath()
	why := fmt.Sprintf("%s (the real Azure and Mooncake traces) is not beside the repository", filepath.Join("..", "shared", "traces"))
	if n := len(tests); n > 0 {
		plural := "s"
		if n == 1 {
			plural = ""
		}
		return fmt.Sprintf("note: %s: %d test%s skipped: %s: %s", pkg, n, plural, why, strings.Join(tests, ", "))
	}
	if _, err := os.Stat(Dir()); err == nil || runPattern() != "" {
		return ""
	}
	return fmt.Sprintf("note: %s: the tests that replay shared traces skipped: %s (go test -v ./%s | grep SKIP lists them)", pkg, why, pkg)
}

// show writes line where the person running the tests sees it.
func show(line string) {
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, line)
			tty.Close()
			return
		}
	}
	fmt.Println(line)
}

// runPattern is the -test.run pattern, "" when none was given.
func runPattern() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
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
