package build

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A library an LD_PRELOAD library needs, found through that library's own
// RUNPATH (or RPATH) with $ORIGIN, is loaded into the server too:
// rebuilding it changes $LD_PRELOAD's digest; rebuilding a library beside
// it that nothing needs does not. Built with the system's C compiler.
func TestIdentityPreloadRunpath(t *testing.T) {
	t.Parallel()
	cc := testenv.Need(t, "cc", testenv.InstallCC)
	dir := idNodeProject(t)
	for _, tags := range []string{"--enable-new-dtags", "--disable-new-dtags"} { // RUNPATH, RPATH
		rp := idTempDir(t)
		build := func(name, content string, args ...string) {
			t.Helper()
			idWrite(t, rp, idFile{path: name + ".c", content: content})
			args = append([]string{"-shared", "-fPIC", "-o", filepath.Join(rp, "lib"+name+".so"), filepath.Join(rp, name+".c")}, args...)
			if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
				testenv.Missing(t, fmt.Sprintf("cc cannot build lib%s.so (%v): %s\n%s", name, err, testenv.InstallCC, b))
			}
		}
		build("deep", "int deep(void) { return 1; }\n")
		build("dep", "int deep(void);\nint dep(void) { return deep(); }\n", "-L"+rp, "-ldeep", "-Wl,-rpath,$ORIGIN", "-Wl,"+tags)
		build("hook", "int dep(void);\nint hook(void) { return dep(); }\n", "-L"+rp, "-ldep", "-Wl,-rpath,$ORIGIN", "-Wl,"+tags)
		build("unused", "int unused(void) { return 1; }\n")
		spec := idSpec(dir, idFakeBin(t, "a"), "LD_PRELOAD="+filepath.Join(rp, "libhook.so"))
		before := idCompute(t, spec)
		build("unused", "int unused(void) { return 2; }\n")
		idWantChanges(t, before, idCompute(t, spec))
		for _, lib := range []string{"dep", "deep"} {
			if lib == "dep" {
				build("dep", "int deep(void);\nint dep(void) { return deep() + 1; }\n", "-L"+rp, "-ldeep", "-Wl,-rpath,$ORIGIN", "-Wl,"+tags)
			} else {
				build("deep", "int deep(void) { return 2; }\n")
			}
			next := idCompute(t, spec)
			if got := Changes(before, next); len(got) != 1 || got[0] != "$LD_PRELOAD" {
				t.Errorf("%s: lib%s.so rebuilt: changes %q, want $LD_PRELOAD", tags, lib, got)
			}
			before = next
		}
	}
}
