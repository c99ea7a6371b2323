package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// The report is pinned by golden files; run `go test ./examples/capacity
// -update` after a deliberate change and review the diff.
func TestRunGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"atlas", nil},
		{"batch48_output400", []string{"-batch", "48", "-output", "400"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(&out, tc.args); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("output differs from %s (rerun with -update to accept):\n%s", golden, got)
			}
		})
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-batch", "0"}, "Replica.Point.Batch must be >= 1, got 0"},
		{[]string{"-itl", "-5ms"}, "Replica.Point.SLO.ITL must be > 0"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out bytes.Buffer
		err := run(&out, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestRunHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, []string{"-h"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-batch") {
		t.Errorf("help does not list -batch:\n%s", out.String())
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{
		458752: "458,752", 28672: "28,672", 1000: "1,000", 999: "999", 711.1111: "711.1",
		0.6104: "0.6104", -1234567: "-1,234,567", 57: "57", 1234.5: "1234",
	} {
		if got := number(v); got != want {
			t.Errorf("number(%v) = %q, want %q", v, got, want)
		}
	}
}
