package build

import (
	"os"
	"path/filepath"
	"strings"
)

// systemSites returns the site-packages directories of the Python
// interpreter rt that exist, when its server loads them: Python imports
// site at start, which puts PREFIX/lib/pythonX.Y/site-packages on sys.path
// and runs its .pth files (Debian's python also adds
// /usr/local/lib/pythonX.Y/dist-packages, /usr/lib/python3/dist-packages
// and /usr/lib/pythonX.Y/dist-packages). PREFIX is $PYTHONHOME, else the
// directory above the one of rt (symbolic links resolved, as Python finds
// its prefix from its executable); X.Y is the interpreter's when its name
// says it, else every version found. A virtual environment without
// system site-packages (pyvenv.cfg) loads none of them.
func systemSites(spec Spec, dir, rt string) []string {
	if rt == "" || len(spec.Command) == 0 || venvWithoutSystemSite(spec, dir) {
		return nil
	}
	real, err := filepath.EvalSymlinks(rt)
	if err != nil {
		return nil
	}
	prefix := filepath.Dir(filepath.Dir(real))
	if home := lookupEnv(spec, "PYTHONHOME"); home != "" {
		prefix, _, _ = strings.Cut(home, string(filepath.ListSeparator))
	}
	version := "python3*"
	if m := pythonVersionName().FindStringSubmatch(filepath.Base(real)); m != nil {
		version = "python" + m[1]
	}
	patterns := []string{filepath.Join(prefix, "lib", version, "site-packages"), filepath.Join(prefix, "lib64", version, "site-packages")}
	if prefix == "/usr" {
		patterns = append(patterns, filepath.Join("/usr/local/lib", version, "dist-packages"), "/usr/lib/python3/dist-packages", filepath.Join("/usr/lib", version, "dist-packages"))
	}
	var out []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, d)
			}
		}
	}
	return out
}
