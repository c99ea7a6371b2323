package sharedtraces

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dir is ../shared/traces beside the module root, wherever in the module
// the test runs.
func TestDir(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(wd)) // internal/sharedtraces
	assert.Equal(t, filepath.Join(root, "..", "shared", "traces"), Dir())
	assert.Equal(t, "internal/sharedtraces", packagePath())
}

// resetAbsent clears what Path and Optional recorded, and restores it
// when t ends.
func resetAbsent(t *testing.T) {
	saved := absent.skipped
	savedReduced, savedFiles := absent.reduced, absent.files
	t.Cleanup(func() { absent.skipped, absent.reduced, absent.files = saved, savedReduced, savedFiles })
	absent.skipped, absent.reduced, absent.files = nil, nil, nil
}

// A test that needs a missing trace skips, and the note names it and says
// why, in one line; a test that only runs with less (Optional) is counted
// apart; past three names the note counts the rest.
func TestMissingTraceSkipsAndIsNamed(t *testing.T) {
	resetAbsent(t)
	require.Empty(t, Note(), "nothing went without a trace")

	var path string
	var inner *testing.T
	t.Run("needs_it", func(t *testing.T) {
		inner = t
		path = Path(t, "no-such-trace.csv")
		t.Error("Path returned for a missing trace instead of skipping")
	})
	assert.True(t, inner.Skipped())
	assert.Empty(t, path)
	assert.Equal(t, []string{"TestMissingTraceSkipsAndIsNamed/needs_it"}, absent.skipped)

	// The note's first clause is the trace directory (absent here, where
	// ../shared has no no-such-trace.csv and may have no traces at all).
	what := filepath.Join("..", "shared", "traces") + " (the real Azure and Mooncake traces) is not beside the repository"
	if _, err := os.Stat(Dir()); err == nil {
		what = filepath.Join("..", "shared", "traces") + " lacks no-such-trace.csv"
	}
	assert.Equal(t, "note: internal/sharedtraces: "+what+": 1 test skipped (TestMissingTraceSkipsAndIsNamed/needs_it); "+
		"go test -v ./internal/sharedtraces | grep SKIP lists them", Note())

	for _, name := range []string{"b", "c", "d"} {
		t.Run(name, func(t *testing.T) { Path(t, "no-such-trace.csv") })
	}
	t.Run("fuzz", func(t *testing.T) {
		p, ok := Optional(t, "no-such-trace.jsonl")
		assert.False(t, ok)
		assert.Empty(t, p)
	})
	if _, err := os.Stat(Dir()); err == nil {
		what = filepath.Join("..", "shared", "traces") + " lacks no-such-trace.csv, no-such-trace.jsonl"
	}
	assert.Equal(t, "note: internal/sharedtraces: "+what+": 4 tests skipped (TestMissingTraceSkipsAndIsNamed/needs_it, "+
		"TestMissingTraceSkipsAndIsNamed/b, TestMissingTraceSkipsAndIsNamed/c and 1 more), "+
		"1 test ran without its real-trace inputs (TestMissingTraceSkipsAndIsNamed/fuzz); "+
		"go test -v ./internal/sharedtraces | grep SKIP lists them", Note())
}

// Only a reduced test: no SKIP to list.
func TestNoteOfAReducedTestOnly(t *testing.T) {
	resetAbsent(t)
	record(&absent.reduced, "FuzzAzure", "AzureLLMInferenceTrace_conv.csv")
	record(&absent.reduced, "FuzzAzure", "AzureLLMInferenceTrace_conv.csv") // once
	assert.Regexp(t, `^note: internal/sharedtraces: .*: 1 test ran without its real-trace inputs \(FuzzAzure\)$`, Note())
}

// The note goes to the go command's standard error only when go test runs
// the binary and that is a pipe or a terminal.
func TestGoStderrIsThatOfGoTest(t *testing.T) {
	assert.Empty(t, goStderr(0))
	assert.Empty(t, goStderr(1))
	assert.Empty(t, goStderr(os.Getpid()), "this process is not the go command")
	assert.False(t, isGoTest(os.Getpid()))
	assert.False(t, isGoTest(-1))

	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("ok  \tx\n"), 0o600))
	require.NoError(t, writeLine(path, "note: y"))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "ok  \tx\nnote: y\n", string(got), "appended, never over what was there")
}

// Every test that reads ../shared (the traces, the measured runs,
// vllm-diff, the design notes) finds it through Path or Optional, so that
// a clone without it says what it skipped; and every package that calls
// them has the TestMain that prints the note. A test reads ../shared when
// a string naming it is a constant's or variable's value or an argument
// of a filepath, path or os function (a message may name it freely).
func TestEveryTestFindsSharedDataHere(t *testing.T) {
	root := moduleRoot()
	calls := map[string]bool{} // package directory -> calls Path or Optional
	mains := map[string]bool{} // package directory -> has sharedtraces.Main
	var direct []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "internal", "sharedtraces") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		rel, _ := filepath.Rel(root, path)
		lits := func(exprs []ast.Expr) {
			for _, e := range exprs {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && readsShared(s) {
						direct = append(direct, rel+": "+lit.Value)
					}
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec: // const dir = "../../shared/traces"
				lits(n.Values)
			case *ast.CallExpr: // filepath.Join("..", "shared", …), os.Open("../shared/…")
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "filepath" || x.Name == "path" || x.Name == "os") {
						lits(n.Args)
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "sharedtraces" {
					switch n.Sel.Name {
					case "Path", "Optional":
						calls[dir] = true
					case "Main":
						mains[dir] = true
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, direct, "these tests read ../shared themselves: use sharedtraces.Path (or Optional)")
	require.NotEmpty(t, calls, "no test calls sharedtraces.Path: is the walk reading the module?")
	for dir := range calls {
		assert.True(t, mains[dir], "%s calls sharedtraces.Path but has no TestMain calling sharedtraces.Main: its skips would pass silently", dir)
	}
}

// readsShared is whether a string literal in a test names something in
// ../shared.
func readsShared(s string) bool {
	if s == "shared" {
		return true // a path element: filepath.Join("..", "shared", …)
	}
	for _, part := range []string{"../shared", "shared/traces", "shared/measured", "vllm-diff", "DESIGN.md"} {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

func TestReadsShared(t *testing.T) {
	for _, s := range []string{"shared", "../../shared/traces", "shared/measured/x", "../shared/vllm-diff", "../shared/DESIGN.md"} {
		assert.True(t, readsShared(s), s)
	}
	for _, s := range []string{"shared prefix", "sharedWorkload", "traces", ""} {
		assert.False(t, readsShared(s), s)
	}
}
