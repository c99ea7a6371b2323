package servesim_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every library package, internal ones included, has a package comment
// (in doc.go, its reading guide, for every package outside internal/; an
// internal leaf of one or two files may keep it in its file) and a runnable
// Example whose output go test checks (a non-empty "// Output:"). The
// programs under examples/ are examples themselves and are not held to it.
func TestEveryPackageHasADocAndAnExample(t *testing.T) {
	dirs := map[string]bool{}
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || path == "examples") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	}))
	require.Greater(t, len(dirs), 30, "the walk found too few packages")
	for dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		documented, example, program := false, false, false
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
			require.NoError(t, err)
			name := strings.TrimSuffix(f.Name.Name, "_test")
			program = program || name == "main"
			if !strings.HasSuffix(file, "_test.go") {
				documented = documented || f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ")
				continue
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
					continue
				}
				for _, c := range f.Comments {
					text, ok := strings.CutPrefix(c.Text(), "Output:")
					if ok && c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace && strings.TrimSpace(text) != "" {
						example = true
					}
				}
			}
		}
		if program {
			continue // a program, not a library package
		}
		assert.True(t, documented, "%s: no package comment (\"Package … \")", dir)
		assert.True(t, example, "%s: no Example with a non-empty // Output:", dir)
		if !strings.HasPrefix(dir, "internal"+string(filepath.Separator)) {
			_, err := os.Stat(filepath.Join(dir, "doc.go"))
			assert.NoError(t, err, "%s: no doc.go, the package's reading guide", dir)
		}
	}
}
