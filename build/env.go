package build

import (
	"os"
	"slices"
	"strings"
)

// lookupEnv returns the value of name in the server's environment.
func lookupEnv(spec Spec, name string) string {
	v, _ := lookupEnvOK(spec, name)
	return v
}

func lookupEnvOK(spec Spec, name string) (string, bool) {
	if spec.Environ == nil {
		return os.LookupEnv(name)
	}
	for i := len(spec.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(spec.Environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// envArtifacts records RedirectingEnv and spec.EnvNames by name with the
// digest of each value (by digest: keyed, see Spec.EnvKeyFile); an unset
// variable is Missing, an empty one is not. Values are never kept. A
// variable that names files to load (envNamedFiles, relative to dir) has
// their bytes in its digest, and so has LD_LIBRARY_PATH the libraries the
// ELF files bins (the runtime, the entry) need from it (libraryPathFiles),
// and LD_PRELOAD and LD_AUDIT the libraries theirs need through their own
// RUNPATH or RPATH (runpathFiles).
func envArtifacts(spec Spec, dir string, bins []string, digest func([]byte) Digest) []Artifact {
	names := slices.Concat(RedirectingEnv, spec.EnvNames)
	slices.Sort(names)
	names = slices.Compact(names)
	var out []Artifact
	for _, n := range names {
		v, ok := lookupEnvOK(spec, n)
		if !ok {
			if slices.Contains(spec.EnvNames, n) {
				out = append(out, Artifact{Role: RoleEnv, Path: n, Missing: true, Why: "named in env: unset"})
			}
			continue
		}
		a := Artifact{Role: RoleEnv, Path: n, Digest: digest([]byte(v))} // no size: even a length says something of a value
		files := envNamedFiles(spec, n, v, dir)
		if n == "LD_PRELOAD" || n == "LD_AUDIT" {
			files = append(files, runpathFiles(dir, files)...)
		}
		if n == "LD_LIBRARY_PATH" {
			files = libraryPathFiles(spec, dir, slices.Concat(bins, envNamedFiles(spec, "LD_PRELOAD", lookupEnv(spec, "LD_PRELOAD"), dir)))
		}
		if len(files) > 0 {
			a.Digest = digest(envFilesInput(v, files))
			a.Why = envFilesWhy(n)
		} else if slices.Contains(RedirectingEnv, n) {
			a.Why = "redirects which code runs (loader, interpreter options or search path); value not recorded"
		} else {
			a.Why = "named in env in mcpepoch.toml; value not recorded"
		}
		out = append(out, a)
	}
	return out
}
