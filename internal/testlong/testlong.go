package testlong

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Env is the environment variable that asks for the long tests.
const Env = "SERVESIM_LONG"

// LogEnv names a file to which each test that asks whether the run is
// long (Enabled, Skip, Int) is appended, once a test binary, as a line
// of its package's directory and its top-level test's name, a tab
// between. A test that never asks runs the same long or not: .ci/run
// logs its quick run and then runs long only the tests logged, rather
// than every test of their packages again.
const LogEnv = "SERVESIM_LONG_LOG"

// logged is the top-level tests this binary has written to LogEnv's file.
var logged struct {
	sync.Mutex
	names map[string]bool
}

// enabled parses the value of Env: "" (unset) is false, as is any false
// value strconv.ParseBool accepts.
func enabled(value string) (bool, error) {
	if value == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want 1 (run the long tests) or 0", Env, value)
	}
	return on, nil
}

// Enabled reports whether SERVESIM_LONG asks for the long tests; a value
// it cannot read fails t.
func Enabled(t testing.TB) bool {
	t.Helper()
	if path := os.Getenv(LogEnv); path != "" {
		if err := logTest(path, t.Name()); err != nil {
			t.Fatalf("%s: %v", LogEnv, err)
		}
	}
	on, err := enabled(os.Getenv(Env))
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// Skip skips t unless SERVESIM_LONG=1, saying what makes it long and how
// to run it.
func Skip(t testing.TB, why string) {
	t.Helper()
	if !Enabled(t) {
		t.Skipf("long test (%s): set %s=1 to run it", why, Env)
	}
}

// Int is short normally and long under SERVESIM_LONG=1: the size of a
// test that runs cheaper by default and at full strength when long.
func Int(t testing.TB, short, long int) int {
	t.Helper()
	if Enabled(t) {
		return long
	}
	return short
}

// logTest appends the top-level test of name (a subtest's parent) with
// the working directory (go test runs a package's tests in its
// directory) to the file at path, unless this binary already has. Each
// line is one write to a file opened for appending, so that the test
// binaries go test runs at once do not interleave their lines.
func logTest(path, name string) error {
	top, _, _ := strings.Cut(name, "/")
	logged.Lock()
	defer logged.Unlock()
	if logged.names[top] {
		return nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(dir + "\t" + top + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if logged.names == nil {
		logged.names = map[string]bool{}
	}
	logged.names[top] = true
	return nil
}
