package build

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
)

// userSites returns the user site-packages directories a Python server
// loads: site.USER_SITE, which Python puts on sys.path, and whose .pth
// files and usercustomize.py it runs at every start. Python loads it
// unless given -s or -I, PYTHONNOUSERSITE is set, or it runs in a virtual
// environment without system site-packages (pyvenv.cfg). The directory
// is $PYTHONUSERBASE (default ~/.local) lib/pythonX.Y/site-packages, and
// on macOS also ~/Library/Python/X.Y/lib/python/site-packages; X.Y is
// the interpreter's when its name says it, else every version found.
func userSites(spec Spec, dir string, l launchArgs, rt string, id *Identity) []depRoot {
	if len(spec.Command) == 0 || !isPython(l, rt) {
		return nil
	}
	switch {
	case l.noUserSite:
		return nil
	case lookupEnv(spec, "PYTHONNOUSERSITE") != "":
		id.Inferred = append(id.Inferred, "python: PYTHONNOUSERSITE is set: no user site-packages is loaded")
		return nil
	case venvWithoutSystemSite(spec, dir):
		return nil
	}
	home := lookupEnv(spec, "HOME")
	base := lookupEnv(spec, "PYTHONUSERBASE")
	if base == "" && home != "" {
		base = filepath.Join(home, ".local")
	}
	version := "python*"
	if m := pythonVersionName().FindStringSubmatch(filepath.Base(rt)); m != nil {
		version = "python" + m[1]
	}
	var patterns []string
	if base != "" {
		patterns = append(patterns, filepath.Join(base, "lib", version, "site-packages"))
	}
	if runtime.GOOS == "darwin" && home != "" {
		patterns = append(patterns, filepath.Join(home, "Library", "Python", strings.TrimPrefix(version, "python"), "lib", "python", "site-packages"))
	}
	var out []depRoot
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, depRoot{path: d, why: "python's user site-packages: on sys.path, and its .pth files and usercustomize.py run at every start (-s or PYTHONNOUSERSITE turn it off)"})
			}
		}
	}
	return out
}

// pythonVersionName matches an interpreter named for its version,
// python3.12; compiled on first use.
var pythonVersionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^python(\d+\.\d+)$`) })

// venvWithoutSystemSite reports whether the launch command's python is a
// virtual environment's (a pyvenv.cfg beside it or one directory up, as
// Python looks) whose include-system-site-packages is not true: such an
// interpreter loads no user site.
func venvWithoutSystemSite(spec Spec, dir string) bool {
	exe := spec.Command[0]
	if !strings.Contains(exe, "/") {
		exe = ""
		for _, d := range filepath.SplitList(lookupEnv(spec, "PATH")) {
			if c := abs(dir, filepath.Join(d, spec.Command[0])); isRegular(c) {
				exe = c
				break
			}
		}
	}
	if exe == "" {
		return false
	}
	exe = abs(dir, exe)
	for _, cfg := range []string{filepath.Join(filepath.Dir(exe), "pyvenv.cfg"), filepath.Join(filepath.Dir(filepath.Dir(exe)), "pyvenv.cfg")} {
		b, err := os.ReadFile(cfg)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "include-system-site-packages" {
				return !strings.EqualFold(strings.TrimSpace(v), "true")
			}
		}
		return true
	}
	return false
}
