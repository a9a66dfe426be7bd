package build

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// deps digests the dependency trees of spec into id.Deps (and id.Native):
// spec.Deps, or by default node_modules in dir, dir/.venv's site-packages
// and $VIRTUAL_ENV's, where they exist. Lockfiles say what was meant to be
// installed; these say what the runtime will load.
func deps(spec Spec, dir string, id *Identity) error {
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
	seen := map[string]bool{}
	for _, r := range roots {
		full := abs(dir, r)
		if seen[full] {
			continue
		}
		seen[full] = true
		var cache *StatCache
		var cachePath string
		if spec.CacheDir != "" {
			sum := sha256.Sum256([]byte(full))
			cachePath = filepath.Join(spec.CacheDir, "tree-"+hex.EncodeToString(sum[:8])+".cache")
			c, err := LoadStatCache(cachePath)
			if err != nil {
				id.Inferred = append(id.Inferred, fmt.Sprintf("stat cache %s ignored: %v", cachePath, err))
			}
			cache = c
		}
		t, err := TreeDigest(full, TreeOptions{Cache: cache, Rehash: spec.Rehash, SkipDirs: TreeSkipDirs})
		if err != nil {
			return &InputError{Field: "deps", Path: display(dir, full), Err: err}
		}
		if cache != nil && cache.Dirty() {
			if err := cache.Save(cachePath); err != nil {
				id.Inferred = append(id.Inferred, fmt.Sprintf("stat cache %s not saved: %v", cachePath, err))
			}
		}
		id.Deps = append(id.Deps, Artifact{Role: RoleDeps, Path: display(dir, full), Digest: t.Digest,
			Size: t.Bytes, Files: t.Files, Native: len(t.NativeAddons),
			Why: "the dependency tree the runtime loads: lockfiles describe intent, not the bytes on disk"})
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
