package apicheck_test

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"

	"github.com/servesim/servesim/internal/apicheck"
)

var update = flag.Bool("update", false, "record the current exported API as the baseline")

const module = "github.com/servesim/servesim"

// public are the packages other tools import.
var public = []string{"costmodel", "costmodel/costmodeltest", "engine", "engine/enginetest", "kvtier", "scenario", "sim", "sim/analysis", "sim/chart", "sim/report", "sim/shard", "sim/stats", "workload", "workload/blis"}

// The exported API of every public package is compatible with the
// recorded baseline.
func TestAPIIsCompatible(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every public package")
	}
	paths := make([]string, len(public))
	for i, p := range public {
		paths[i] = module + "/" + p
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: "../.."}, paths...)
	require.NoError(t, err)
	require.Len(t, pkgs, len(public))
	for _, pkg := range pkgs {
		require.Empty(t, pkg.Errors, pkg.PkgPath)
		file := filepath.Join("testdata", strings.ReplaceAll(strings.TrimPrefix(pkg.PkgPath, module+"/"), "/", "_")+".export")
		old, err := readBaseline(file, pkg.PkgPath)
		if *update {
			// Only a package whose API differs from its baseline (or that
			// has none) is recorded again: the export data also holds
			// source positions, which move with every edit, so rewriting
			// every file would put unchanged packages in the commit.
			if err == nil {
				if inc, comp := apicheck.Diff(old, pkg.Types); len(inc)+len(comp) == 0 {
					continue
				}
			}
			f, err := os.Create(file)
			require.NoError(t, err)
			w := bufio.NewWriter(f)
			require.NoError(t, gcexportdata.Write(w, nil, pkg.Types))
			require.NoError(t, w.Flush())
			require.NoError(t, f.Close())
			t.Logf("%s: recorded %s", pkg.PkgPath, file)
			continue
		}
		require.NoError(t, err, "no baseline for %s: record one with go test ./internal/apicheck -update", pkg.PkgPath)
		incompatible, compatible := apicheck.Diff(old, pkg.Types)
		for _, c := range compatible {
			t.Logf("%s: compatible: %s", pkg.PkgPath, c)
		}
		if len(incompatible) > 0 {
			t.Errorf("%s: incompatible API changes: a tool that imports servesim would no longer build. If deliberate, record the API with go test ./internal/apicheck -update and say why in the commit:\n  %s",
				pkg.PkgPath, strings.Join(incompatible, "\n  "))
		}
	}
}

// readBaseline reads the API recorded for package path in file.
func readBaseline(file, path string) (*types.Package, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	old, err := gcexportdata.Read(bufio.NewReader(f), token.NewFileSet(), map[string]*types.Package{}, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return old, nil
}

// check type-checks one file of Go source as package p.
func check(src string) *types.Package {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		panic(err)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, []*ast.File{f}, nil)
	if err != nil {
		panic(err)
	}
	return pkg
}

// A field added to a config struct is compatible; a renamed one is not.
func ExampleDiff() {
	old := check("package p\ntype Config struct{ Batch int }")
	added := check("package p\ntype Config struct{ Batch, Budget int }")
	renamed := check("package p\ntype Config struct{ MaxSeqs int }")
	inc, comp := apicheck.Diff(old, added)
	fmt.Println(len(inc), comp)
	inc, _ = apicheck.Diff(old, renamed)
	fmt.Println(inc)
	// Output:
	// 0 [Config.Budget: added]
	// [Config.Batch: removed]
}
