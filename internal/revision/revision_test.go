package revision

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

// swap runs f with the registered sources set aside.
func swap(t *testing.T) {
	mu.Lock()
	saved := sources
	sources = nil
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); sources = saved; mu.Unlock() })
}

// Every registered file is hashed, under its package path, in name
// order; a byte changed changes the hash; a file embedded but not listed,
// or listed but not embedded, is refused.
func TestRegisterHashesEveryFile(t *testing.T) {
	swap(t)
	fsys := fstest.MapFS{"b.go": {Data: []byte("package b")}, "a.go": {Data: []byte("package a")}}
	Register("example.com/p", fsys, "b.go", "a.go")
	assert.Equal(t, []string{"example.com/p/a.go", "example.com/p/b.go"}, Files())
	h := Hash()
	assert.Regexp(t, `^servesim-analysis/sha256:[0-9a-f]{16}$`, h)
	assert.Equal(t, h, Hash())

	swap(t)
	fsys["a.go"].Data[0] = 'P'
	Register("example.com/p", fsys, "a.go", "b.go")
	assert.NotEqual(t, h, Hash())

	assert.Panics(t, func() { Register("example.com/q", fsys, "a.go") }, "b.go embedded, not listed")
	assert.Panics(t, func() { Register("example.com/r", fsys, "a.go", "b.go", "c.go") }, "c.go listed, not embedded")
}
