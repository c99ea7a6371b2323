package report

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

// Module is servesim's module path.
const Module = "github.com/servesim/servesim"

// Unknown stands for a build fact the binary does not record.
const Unknown = "unknown"

// Build identifies the simulator that produced a card. Fields are plain
// strings, so a caller that knows better (a CI job that knows the commit
// of a binary built with -buildvcs=false) sets them.
type Build struct {
	Module    string `json:"module"`
	Version   string `json:"version"`  // module version; "(devel)" when built inside the module
	Revision  string `json:"revision"` // VCS commit, or Unknown
	Time      string `json:"time"`     // commit time, or Unknown
	Modified  string `json:"modified"` // "true" if the tree had local changes, "false", or Unknown
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"` // GOOS/GOARCH of the binary
}

// ReadBuild reads the running binary's build information
// (runtime/debug.ReadBuildInfo): servesim's version as the main module or
// as a dependency, and the VCS settings the go command stamped. Builds
// with -buildvcs=false (GOFLAGS on some machines), go run of a file list,
// and test binaries record no VCS settings: Revision, Time and Modified are
// then Unknown.
func ReadBuild() Build {
	b := Build{Module: Module, Version: Unknown, Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := moduleVersion(info); v != "" {
		b.Version = v
	}
	if info.Main.Path != Module {
		return b // the VCS settings describe the main module, not servesim
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value
		}
	}
	return b
}

// moduleVersion is servesim's version in info: as the main module, or as
// a dependency (replaced by another version or by a directory); "" if
// servesim is not in the binary.
func moduleVersion(info *debug.BuildInfo) string {
	if info.Main.Path == Module {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		switch {
		case d.Path != Module:
		case d.Replace == nil:
			return d.Version
		case d.Replace.Version != "":
			return d.Replace.Version
		default:
			return "replaced by " + d.Replace.Path
		}
	}
	return ""
}

// WithGit returns b with Revision and Modified asked of git, in the
// working directory, when the binary recorded no revision (go run with
// -buildvcs=false): the commit marked "(from git at run time)", and
// whether tracked files had changes. They stay Unknown when git cannot
// tell; a recorded revision is kept.
func (b Build) WithGit() Build {
	if b.Revision != Unknown {
		return b
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return b
	}
	b.Revision = strings.TrimSpace(string(out)) + " (from git at run time)"
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	switch {
	case err != nil:
		b.Modified = Unknown
	case len(status) > 0:
		b.Modified = "true"
	default:
		b.Modified = "false"
	}
	return b
}
