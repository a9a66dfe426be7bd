package build

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/jsonc"
)

// tsconfigChain returns the files the project's tsconfig.json extends,
// followed through each one's "extends" (a path or a list of paths,
// TypeScript 5.0 on): absolute paths, a file found as written or with
// ".json" added, as tsc, tsx, ts-node and bun resolve a relative one. A
// base named by a package ("@tsconfig/node20") lies in a dependency
// tree, hashed as such, and is not followed; nor is a file that cannot be
// read or parsed (what the runtime then does with it is its own error).
// What a base's compilerOptions.paths and baseUrl name changes what an
// import resolves to, so a server that runs from source with a tsconfig
// that extends another reads that file as surely as its own.
func tsconfigChain(dir string) []string {
	var out []string
	var follow func(file string, depth int)
	follow = func(file string, depth int) {
		if depth > 16 {
			return
		}
		b, err := os.ReadFile(file)
		if err != nil || len(b) > 1<<20 {
			return
		}
		var cfg struct {
			Extends json.RawMessage `json:"extends"`
		}
		if json.Unmarshal(jsonc.Strip(b), &cfg) != nil || len(cfg.Extends) == 0 {
			return
		}
		var bases []string
		var one string
		if json.Unmarshal(cfg.Extends, &one) == nil {
			bases = []string{one}
		} else if json.Unmarshal(cfg.Extends, &bases) != nil {
			return
		}
		for _, base := range bases {
			if !strings.HasPrefix(base, ".") && !filepath.IsAbs(base) {
				continue // a package: in a dependency tree
			}
			p := base
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			if !isRegular(p) && isRegular(p+".json") {
				p += ".json"
			}
			p = filepath.Clean(p)
			if !isRegular(p) || slices.Contains(out, p) {
				continue
			}
			out = append(out, p)
			follow(p, depth+1)
		}
	}
	follow(filepath.Join(dir, "tsconfig.json"), 0)
	return out
}

// tsconfigBases hashes, as configuration, the files the project's
// tsconfig.json extends (tsconfigChain), when a code tree lists
// tsconfig.json (a server run from source: tsx, ts-node, bun, deno) and
// does not list them itself.
func tsconfigBases(fc *FileCache, dir string, code []codeInput, id *Identity) error {
	if !slices.ContainsFunc(code, func(c codeInput) bool { return slices.Contains(c.only, "tsconfig.json") }) {
		return nil
	}
	for _, p := range tsconfigChain(dir) {
		if slices.ContainsFunc(code, func(c codeInput) bool { return c.lists(p) }) ||
			slices.ContainsFunc(id.Config, func(a Artifact) bool { return abs(dir, filepath.FromSlash(a.Path)) == p }) {
			continue
		}
		a, err := artifact(fc, RoleConfig, dir, p, false)
		if err != nil {
			return err
		}
		a.Why = "a base the project's tsconfig.json extends: its paths and baseUrl change what an import resolves to"
		id.Config = append(id.Config, a)
	}
	return nil
}
