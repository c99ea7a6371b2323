package sim

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Parallel tests and the twin knobs.
//
// sim's slow twins are package-level variables (noMixed, planAtOnce, the
// tiers' eager* knobs, …) that a test sets, runs, and sets back, and a
// few counters (touchesSkipped, decodesPutOff, anonBlocks) that a test
// zeroes and reads. A test that does either must run alone: it stays
// sequential. A test that does neither may call t.Parallel: go test
// runs the parallel top-level tests together only after every
// sequential one has returned, so they never see a knob flipped, and
// they share no state but the counters, which are atomic. That lets
// sim's heaviest tests use both cores of a CI host (sim's suite was
// about 300 s on one core, the long tail of `go test ./...`).
//
// TestParallelTestsTouchNoPackageVar holds that rule: it reads sim's
// source and fails when a top-level function that calls Parallel can
// reach, through the package's functions it calls or names, a write to
// a package-level variable, or a read of a counter by a test.

// sharedCounters are the package's counters: production code adds to
// them (atomically), tests zero and read them, so a test that reads one
// must not run beside another that moves it.
var sharedCounters = map[string]bool{"touchesSkipped": true, "decodesPutOff": true, "anonBlocks": true}

// processCounters are the calls that read the process's own counters
// (its bytes and objects allocated), which every test running at once
// adds to: a test that measures by them is sequential (a sequential
// test runs while no parallel one does). TestFleetSizeIsBounded, made
// parallel in the nineteenth round, failed so when the twentieth's
// tests allocated beside it (1,546,880 bytes against its 1 MiB).
var processCounters = map[string]bool{"runtime.ReadMemStats": true, "testing.AllocsPerRun": true}

func TestParallelTestsTouchNoPackageVar(t *testing.T) {
	bad := parallelTouches(t, ".")
	require.Empty(t, bad, "parallel tests that reach a write to a package-level variable (or a counter read): make them sequential or the knob per run")
}

// TestParallelCheckFindsATouch makes sure the check can fail: a parallel
// test that sets a knob in a helper it calls through a method and a
// function value is found, and a sequential one is not.
func TestParallelCheckFindsATouch(t *testing.T) {
	dir := t.TempDir()
	src := `package sim

var knob bool
var count int

type tw struct{}

func (tw) flip() { knob = !knob }
func setBoth() { var x tw; x.flip() }
func counted() { count++ }

func TestSeq(t *testing.T) { setBoth() }
func TestPar(t *testing.T) { t.Parallel(); f := setBoth; f() }
func TestParCount(t *testing.T) { t.Parallel(); counted() }
func TestParLocal(t *testing.T) { t.Parallel(); knob := 1; knob++; _ = knob }
func TestParClean(t *testing.T) { t.Parallel(); _ = knob }
func TestParCounter(t *testing.T) { t.Parallel(); _ = touchesSkipped.Load() }
func measured() { var m runtime.MemStats; runtime.ReadMemStats(&m) }
func TestParMem(t *testing.T) { t.Parallel(); measured() }
func TestSeqMem(t *testing.T) { measured() }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(src), 0o644))
	bad := parallelTouches(t, dir)
	require.Equal(t, []string{
		"TestPar: knob (in flip)",
		"TestParCount: count (in counted)",
		"TestParCounter: touchesSkipped (in TestParCounter)",
		"TestParMem: runtime.ReadMemStats (in measured)",
	}, bad)
}

// parallelTouches lists, for each top-level function in the package in
// dir that calls Parallel, the first package-level variable its reach
// writes (or, for a test function, a counter it reads), as
// "Test: var (in func)".
func parallelTouches(t *testing.T, dir string) []string {
	t.Helper()
	fset := gotoken.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, 0)
	require.NoError(t, err)
	pkg := pkgs["sim"]
	require.NotNil(t, pkg, "package sim in %s", dir)

	globals := map[string]bool{}
	funcs := map[string][]*ast.FuncDecl{} // by name; methods by method name
	testFile := map[*ast.FuncDecl]bool{}
	for name, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != gotoken.VAR {
					continue
				}
				for _, s := range d.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.Name == "_" {
							continue
						}
						globals[n.Name] = true
					}
				}
			case *ast.FuncDecl:
				funcs[d.Name.Name] = append(funcs[d.Name.Name], d)
				testFile[d] = strings.HasSuffix(name, "_test.go")
			}
		}
	}
	for c := range sharedCounters {
		globals[c] = true
	}

	// touch is the first package-level variable fd itself writes (or,
	// in a test file, a counter it reads), shadowing aside: a local of
	// the same name is declared in fd, and then fd is not charged.
	touch := func(fd *ast.FuncDecl) string {
		locals := map[string]bool{}
		ast.Inspect(fd, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == gotoken.DEFINE {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							locals[id.Name] = true
						}
					}
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					locals[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					locals[id.Name] = true
				}
			}
			return true
		})
		written := ""
		root := func(e ast.Expr) {
			for {
				switch x := e.(type) {
				case *ast.Ident:
					if written == "" && globals[x.Name] && !locals[x.Name] {
						written = x.Name
					}
					return
				case *ast.IndexExpr:
					e = x.X
				case *ast.SelectorExpr:
					e = x.X
				case *ast.StarExpr:
					e = x.X
				case *ast.ParenExpr:
					e = x.X
				default:
					return
				}
			}
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != gotoken.DEFINE {
					for _, l := range n.Lhs {
						root(l)
					}
				}
			case *ast.IncDecStmt:
				root(n.X)
			case *ast.UnaryExpr:
				if n.Op == gotoken.AND {
					root(n.X)
				}
			case *ast.Ident:
				if testFile[fd] && written == "" && sharedCounters[n.Name] && !locals[n.Name] {
					written = n.Name
				}
			case *ast.SelectorExpr:
				// A method is not charged with them: methods are
				// reached by name alone (a test router's Route that
				// measures is every router's).
				if pkg, ok := n.X.(*ast.Ident); ok && fd.Recv == nil && written == "" && !locals[pkg.Name] && processCounters[pkg.Name+"."+n.Sel.Name] {
					written = pkg.Name + "." + n.Sel.Name
				}
			}
			return true
		})
		return written
	}

	var bad []string
	for _, roots := range funcs {
		for _, fd := range roots {
			if fd.Recv != nil || !callsParallel(fd) {
				continue
			}
			seen := map[*ast.FuncDecl]bool{}
			queue := []*ast.FuncDecl{fd}
			found := ""
			for len(queue) > 0 && found == "" {
				f := queue[0]
				queue = queue[1:]
				if seen[f] {
					continue
				}
				seen[f] = true
				if v := touch(f); v != "" {
					found = v + " (in " + f.Name.Name + ")"
					break
				}
				ast.Inspect(f.Body, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok {
						queue = append(queue, funcs[id.Name]...)
					}
					return true
				})
			}
			if found != "" {
				bad = append(bad, fd.Name.Name+": "+found)
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// callsParallel is whether fd calls a Parallel method anywhere in it
// (in a subtest too: its siblings then run beside it).
func callsParallel(fd *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fd, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Parallel" {
				found = true
			}
		}
		return !found
	})
	return found
}
