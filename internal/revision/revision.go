package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

type source struct {
	name string // package path "/" file name
	data []byte
}

var (
	mu      sync.Mutex
	sources []source
)

// Register records the files names of fsys (a package's embedded
// analysis sources, at its root) as package pkg's, and returns true, so
// that a package registers from a variable's initialiser:
//
//	var _ = revision.Register("github.com/servesim/servesim/sim", files, "summary.go")
//
// It panics when a name is missing from fsys, or when fsys holds a file
// not named: every embedded file is hashed.
func Register(pkg string, fsys fs.FS, names ...string) bool {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		panic("revision: invariant analysis-sources-embedded broken: " + err.Error())
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			panic("revision: invariant analysis-sources-embedded broken: " + pkg + "/" + e.Name() + " is embedded but not registered")
		}
	}
	var add []source
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic("revision: invariant analysis-sources-embedded broken: " + err.Error())
		}
		add = append(add, source{pkg + "/" + name, b})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range add {
		if slices.ContainsFunc(sources, func(o source) bool { return o.name == s.name }) {
			panic("revision: " + s.name + " registered twice")
		}
	}
	sources = append(sources, add...)
	slices.SortFunc(sources, func(a, b source) int { return strings.Compare(a.name, b.name) })
	return true
}

// Files lists the registered files as package path "/" file name, in the
// order Hash reads them: sorted by that full name, byte by byte.
func Files() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = s.name
	}
	return out
}

// Hash is "servesim-analysis/sha256:" and the first 16 hex digits of a
// SHA-256 over the registered files in Files' order, each as its full
// name, a NUL, its length in decimal, a NUL and its bytes.
func Hash() string {
	mu.Lock()
	defer mu.Unlock()
	h := sha256.New()
	for _, s := range sources {
		fmt.Fprintf(h, "%s\x00%d\x00", s.name, len(s.data))
		h.Write(s.data)
	}
	return "servesim-analysis/sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
