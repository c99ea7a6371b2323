package testlong

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnabledReadsTheVariable(t *testing.T) {
	for value, want := range map[string]bool{"": false, "0": false, "false": false, "1": true, "true": true, "TRUE": true} {
		got, err := enabled(value)
		require.NoError(t, err, "%q", value)
		assert.Equal(t, want, got, "%q", value)
	}
	for _, value := range []string{"yes", "2", " 1"} {
		_, err := enabled(value)
		assert.EqualError(t, err, `SERVESIM_LONG="`+value+`": want 1 (run the long tests) or 0`)
	}
}

func TestSkipAndInt(t *testing.T) {
	t.Setenv(Env, "")
	assert.Equal(t, 10, Int(t, 10, 1000))
	var inner *testing.T
	t.Run("short", func(t *testing.T) {
		inner = t
		Skip(t, "a long case")
		t.Error("ran without SERVESIM_LONG")
	})
	assert.True(t, inner.Skipped(), "skipped without SERVESIM_LONG")

	t.Setenv(Env, "1")
	assert.Equal(t, 1000, Int(t, 10, 1000))
	reached := false
	t.Run("long", func(t *testing.T) {
		Skip(t, "a long case")
		reached = true
	})
	assert.True(t, reached, "SERVESIM_LONG=1 runs it")
}

func TestLogNamesEachTopLevelTestOnce(t *testing.T) {
	forgetLogged(t)
	path := filepath.Join(t.TempDir(), "long.log")
	require.NoError(t, logTest(path, "TestA/x"))
	require.NoError(t, logTest(path, "TestA"))
	require.NoError(t, logTest(path, "TestB/y/z"))
	require.NoError(t, logTest(path, "TestA/w"))

	t.Setenv(LogEnv, path)
	t.Setenv(Env, "")
	t.Run("sub", func(t *testing.T) {
		assert.False(t, Enabled(t))
	})
	assert.Equal(t, 7, Int(t, 7, 70))

	dir, err := os.Getwd()
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, dir+"\tTestA\n"+dir+"\tTestB\n"+dir+"\tTestLogNamesEachTopLevelTestOnce\n", string(got))
}

func TestLogFailsTheTestOnAFileItCannotOpen(t *testing.T) {
	forgetLogged(t)
	err := logTest(filepath.Join(t.TempDir(), "no", "such", "dir"), "TestA")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	logged.Lock()
	assert.False(t, logged.names["TestA"], "a line not written is not remembered")
	logged.Unlock()
}

// forgetLogged empties the names this binary has logged for t's
// duration, and puts them back after it.
func forgetLogged(t *testing.T) {
	logged.Lock()
	saved := logged.names
	logged.names = nil
	logged.Unlock()
	t.Cleanup(func() {
		logged.Lock()
		logged.names = saved
		logged.Unlock()
	})
}
