package moduleroot

import (
	"os"
	"path/filepath"
)

// Path is rel (a slash-separated path from the module root) under the
// root of the module containing the working directory, or rel itself
// when no go.mod is found (opening it then fails, naming the path).
func Path(rel string) string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return filepath.Join(dir, filepath.FromSlash(rel))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return rel
}
