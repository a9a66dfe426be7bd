package build

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"sort"
)

// deps digests the dependency trees of spec into id.Deps (and id.Native):
// spec.Deps, or by default node_modules in dir, dir/.venv's site-packages
// and $VIRTUAL_ENV's, where they exist; and, either way, the trees found
// inside the code or between the entry and dir (nestedDeps). Lockfiles
// say what was meant to be installed; these say what the runtime will
// load.
func deps(spec Spec, dir string, id *Identity, nested []depRoot) error {
	roots := spec.Deps
	if roots == nil {
		if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil && fi.IsDir() {
			roots = append(roots, "node_modules")
		}
		venvs := []string{filepath.Join(dir, ".venv")}
		if v := lookupEnv(spec, "VIRTUAL_ENV"); v != "" {
			venvs = append(venvs, v)
		}
		for _, v := range venvs {
			m, _ := filepath.Glob(filepath.Join(v, "lib", "python*", "site-packages"))
			roots = append(roots, m...)
		}
	}
	all := make([]depRoot, 0, len(roots)+len(nested))
	for _, r := range roots {
		all = append(all, depRoot{path: abs(dir, r), why: "the dependency tree the runtime loads: lockfiles describe intent, not the bytes on disk"})
	}
	seen := map[string]bool{}
	for _, r := range append(all, nested...) {
		full := r.path
		if seen[full] {
			continue
		}
		seen[full] = true
		a, t, err := treeArtifact(spec, dir, full, RoleDeps, TreeOptions{SkipDirs: TreeSkipDirs}, id)
		if err != nil {
			return err
		}
		a.Why = r.why
		id.Deps = append(id.Deps, a)
		for _, n := range t.NativeAddons {
			n.Path = display(dir, full) + "/" + n.Path
			id.Native = append(id.Native, n)
		}
	}
	sort.Slice(id.Deps, func(i, j int) bool { return id.Deps[i].Path < id.Deps[j].Path })
	return nil
}

// goInfo reads the build info of a Go binary, or returns nil.
func goInfo(p string) *GoInfo {
	bi, err := buildinfo.ReadFile(p)
	if err != nil {
		return nil
	}
	gi := &GoInfo{GoVersion: bi.GoVersion, Path: bi.Path, Module: bi.Main.Path, Version: bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs":
			gi.VCS = s.Value
		case "vcs.revision":
			gi.Revision = s.Value
		case "vcs.time":
			gi.Time = s.Value
		case "vcs.modified":
			gi.Modified = s.Value == "true"
		}
	}
	return gi
}
