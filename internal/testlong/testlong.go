package testlong

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that asks for the long tests.
const Env = "SERVESIM_LONG"

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
