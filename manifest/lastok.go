package manifest

import (
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
)

// LastOK is kept in a failed build's manifest: the latest successful build
// before it, by its entry and code, so that a host can tell a server
// running what that build produced (a Go compile error or a type-only tsc
// error leaves the entry byte-identical) from one running what the failed
// build left behind: the manifest's [last_ok] table (docs/formats.md).
type LastOK struct {
	ID        epoch.BuildID `toml:"id" json:"id"`
	Completed time.Time     `toml:"completed" json:"completed"`
	Artifacts []Artifact    `toml:"artifact" json:"artifact"`
}

// lastOK returns what a failed build's manifest keeps of prev, the
// manifest before it: prev itself when it succeeded, else what prev kept.
func lastOK(prev *File) *LastOK {
	switch {
	case prev == nil:
		return nil
	case prev.Build.Status != StatusOK:
		return prev.LastOK
	}
	l := &LastOK{ID: prev.Build.ID, Completed: prev.Build.Completed}
	for _, a := range prev.Artifacts {
		if a.Role == build.RoleEntry || a.Role == build.RoleCode {
			a.Changed = false
			l.Artifacts = append(l.Artifacts, a)
		}
	}
	return l
}

// LastSuccessful returns the entry and code of the latest successful build
// the manifest knows of, and its id: the manifest's own build when it
// succeeded, else its LastOK; nil when none is known (the first build
// failed).
func (f *File) LastSuccessful() (*build.Identity, epoch.BuildID) {
	if f.Build.Status == StatusOK {
		return f.Identity(), f.Build.ID
	}
	if f.LastOK == nil {
		return nil, ""
	}
	g := File{Dir: f.Dir, Command: f.Command, Artifacts: f.LastOK.Artifacts}
	return g.Identity(), f.LastOK.ID
}
