package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/*.golden) from the current output")

// Compare reports whether got equals the file at path: nil if it does, an
// error naming the file (and how to accept the change) if not or if the
// file cannot be read.
func Compare(path string, got []byte) error {
	want, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("golden: %w (go test -update creates it)", err)
	}
	if string(want) != string(got) {
		return fmt.Errorf("golden: output differs from %s (go test -update rewrites it)", path)
	}
	return nil
}

// Check compares got with the file at path in a test, rewriting the file
// first when the test runs with -update; a difference fails the test with a
// diff.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (go test -update creates it)", err)
	}
	assert.Equal(t, string(want), string(got), "output differs from %s (go test -update rewrites it)", path)
}
