package report

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadBuildInATestBinary(t *testing.T) {
	b := ReadBuild()
	assert.Equal(t, Module, b.Module)
	assert.Equal(t, runtime.Version(), b.GoVersion)
	assert.NotEmpty(t, b.Version)
	// Test binaries (and -buildvcs=false builds) stamp no VCS settings.
	for _, f := range []string{b.Revision, b.Time, b.Modified} {
		assert.NotEmpty(t, f, "a fact or Unknown, never empty")
	}
}

func TestModuleVersionAsMainOrDependency(t *testing.T) {
	main := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}
	assert.Equal(t, "(devel)", moduleVersion(main))

	dep := &debug.BuildInfo{Main: debug.Module{Path: "example.com/tool"},
		Deps: []*debug.Module{{Path: "other", Version: "v9"}, {Path: Module, Version: "v0.3.0"}}}
	assert.Equal(t, "v0.3.0", moduleVersion(dep))

	dep.Deps[1].Replace = &debug.Module{Path: "../servesim"}
	assert.Equal(t, "replaced by ../servesim", moduleVersion(dep))
	dep.Deps[1].Replace = &debug.Module{Path: "example.com/fork", Version: "v0.3.1"}
	assert.Equal(t, "v0.3.1", moduleVersion(dep))

	assert.Empty(t, moduleVersion(&debug.BuildInfo{Main: debug.Module{Path: "example.com/tool"}}))
}

// WithGit keeps a revision the binary recorded, and otherwise asks git;
// outside a checkout the facts stay Unknown.
func TestBuildWithGit(t *testing.T) {
	recorded := Build{Revision: "abc", Modified: "false"}
	assert.Equal(t, recorded, recorded.WithGit())
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Chdir(t.TempDir())
	assert.Equal(t, Build{Revision: Unknown, Modified: Unknown}, Build{Revision: Unknown, Modified: Unknown}.WithGit())
}
