package host

import (
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// runtimeFix ends runtimeDrift's lines; doctor (package checkup) finds
// them by their prefix "running ≠ built: the runtime" and splits them at
// "; fix: ".
const runtimeFix = "; fix: give the client the build's PATH (the env of its MCP server entry), or name the interpreter by its absolute path in the launch command"

// runtimeDrift says, in words, how the runtime the running epoch started
// from (running, the host's own identity) differs from the one the last
// successful build lastID resolved (last): another binary, when the
// client's environment (its PATH) finds another interpreter for the
// launch command than the build's shell did (pyenv, nvm, a virtual
// environment's python against the system's), or the same binary loading
// other dependency trees (a virtual environment's interpreter in one
// environment and not in the other). The host runs what it resolved
// itself and its epoch names it; these lines only say that the build
// described another program. Empty when they agree or either is unknown.
func runtimeDrift(last *build.Identity, lastID epoch.BuildID, running *build.Identity) []string {
	if last == nil || running == nil {
		return nil
	}
	b, r := last.Runtime, running.Runtime
	if b.Digest == "" || r.Digest == "" {
		return nil
	}
	name := "the launch command"
	if len(running.Command) > 0 {
		name = running.Command[0]
	}
	if b.Digest != r.Digest || b.Path != r.Path {
		same := ""
		if b.Digest == r.Digest {
			same = " (the same bytes at another path: Python and node find their libraries and site-packages from the path they run at)"
		}
		return []string{"running ≠ built: the runtime differs: the build " + string(lastID) + " resolved " + name + " to " + describeRuntime(b) +
			"; the host resolved it to " + describeRuntime(r) + same + " and runs that, with the client's environment (its PATH)" + runtimeFix}
	}
	built, run := depPaths(last), depPaths(running)
	if slices.Equal(built, run) {
		return nil
	}
	return []string{"running ≠ built: the runtime's environment differs: " + name + " resolved to " + describeRuntime(r) + " on both sides, but the build " + string(lastID) +
		" recorded the dependency trees [" + strings.Join(built, ", ") + "] and the running epoch loads [" + strings.Join(run, ", ") +
		"]: the interpreter runs in another environment (a virtual environment's in one, not in the other)" + runtimeFix}
}

// describeRuntime names a runtime artifact for people: its path, version
// and short digest ("/usr/bin/python3.11 (Python 3.11.2, a83c0370d915)").
func describeRuntime(a build.Artifact) string {
	s := a.Path + " ("
	if a.Version != "" {
		s += a.Version + ", "
	}
	return s + a.Digest.Short() + ")"
}

// depPaths returns the paths of id's dependency trees, sorted.
func depPaths(id *build.Identity) []string {
	out := make([]string, 0, len(id.Deps))
	for _, d := range id.Deps {
		out = append(out, d.Path)
	}
	slices.Sort(out)
	return out
}

// restartDrift is runtimeDrift for the epoch a restart just started, for
// the answer to the build signal or restart request (out.manifest, else
// the manifest read again): the record that caused it says which
// interpreter the host runs when it is not the one the build resolved.
func (h *Host) restartDrift(out restartOutcome) []string {
	h.mu.Lock()
	c := h.child
	h.mu.Unlock()
	if c == nil || c.epoch != out.NewEpoch {
		return nil
	}
	last, lastID := h.lastBuild(out.manifest)
	return runtimeDrift(last, lastID, c.identity)
}

// lastBuild returns the identity of the last successful build in m, or in
// the project's manifest when m is nil; nil when none is known.
func (h *Host) lastBuild(m *manifest.File) (*build.Identity, epoch.BuildID) {
	if m == nil {
		var err error
		if m, err = manifest.Read(layout.Manifest(h.opts.Dir)); err != nil {
			return nil, ""
		}
	}
	return m.LastSuccessful()
}

// builtRuntimeFields returns the audit fields of server_started that name
// the runtime the last successful build resolved, when id's differs from
// it (runtimeDrift): built_runtime ("/usr/bin/python3.11 (Python 3.11.2,
// a83c0370d915)") and built_runtime_build (the build's id). Nil when they
// agree or no build is known.
func (h *Host) builtRuntimeFields(id *build.Identity) map[string]any {
	last, lastID := h.lastBuild(nil)
	if last == nil || last.Runtime.Digest == "" || id.Runtime.Digest == "" ||
		last.Runtime.Digest == id.Runtime.Digest && last.Runtime.Path == id.Runtime.Path {
		return nil
	}
	return map[string]any{"built_runtime": describeRuntime(last.Runtime), "built_runtime_build": string(lastID)}
}
