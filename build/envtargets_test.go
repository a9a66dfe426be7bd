package build

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// envArtifact returns the artifact of variable name in id, failing the
// test when there is none.
func envArtifact(t *testing.T, id *Identity, name string) Artifact {
	t.Helper()
	i := slices.IndexFunc(id.Env, func(a Artifact) bool { return a.Path == name })
	if i < 0 {
		t.Fatalf("$%s not recorded: %+v", name, id.Env)
	}
	return id.Env[i]
}

// A library LD_PRELOAD, LD_AUDIT or DYLD_INSERT_LIBRARIES names, and a
// module BUN_OPTIONS preloads, is code the server runs before its own:
// rebuilding it changes that variable's digest (and only that), though
// neither the value nor the path is recorded, and the explanation says
// the file's bytes are hashed. A bare library name is found as the
// loader finds it, through LD_LIBRARY_PATH.
func TestIdentityEnvNamedLibraries(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	libs := idTempDir(t)
	idWrite(t, libs, idFile{path: "libhook.so", content: "\x7fELF hook one\n"}, idFile{path: "libother.so", content: "\x7fELF other one\n"})
	idWrite(t, libs, idFile{path: "preload/p.ts", content: "console.log('one');\n"}) // outside the project, whose .ts files are code
	hook, other := filepath.Join(libs, "libhook.so"), filepath.Join(libs, "libother.so")
	for _, c := range []struct {
		env     []string
		name    string
		rewrite string // the file rebuilt
		why     string
	}{
		{[]string{"LD_PRELOAD=" + hook}, "LD_PRELOAD", hook, "libraries it names are loaded into the server"},
		{[]string{"LD_PRELOAD=" + other + " " + hook}, "LD_PRELOAD", hook, "libraries"},
		{[]string{"LD_PRELOAD=" + other + ":" + hook}, "LD_PRELOAD", hook, "libraries"},
		{[]string{"LD_PRELOAD=libhook.so", "LD_LIBRARY_PATH=/nonexistent-dir:" + libs}, "LD_PRELOAD", hook, "libraries"},
		{[]string{"LD_AUDIT=" + other + ":" + hook}, "LD_AUDIT", hook, "audit libraries"},
		{[]string{"DYLD_INSERT_LIBRARIES=" + hook}, "DYLD_INSERT_LIBRARIES", hook, "libraries"},
		{[]string{"BUN_OPTIONS=--preload " + filepath.Join(libs, "preload", "p.ts") + " --smol"}, "BUN_OPTIONS", filepath.Join(libs, "preload", "p.ts"), "files it names are loaded before the entry"},
		{[]string{"BUN_OPTIONS=-r=" + hook}, "BUN_OPTIONS", hook, "files it names"},
		{[]string{"BUN_OPTIONS=--import\t" + hook}, "BUN_OPTIONS", hook, "files it names"},
	} {
		spec := idSpec(dir, idFakeBin(t, "a"), c.env...)
		before := idCompute(t, spec)
		a := envArtifact(t, before, c.name)
		if !strings.Contains(a.Why, c.why) || !strings.Contains(a.Why, "value not recorded") {
			t.Errorf("%q: $%s why %q, want it to say %q", c.env, c.name, a.Why, c.why)
		}
		idWrite(t, filepath.Dir(c.rewrite), idFile{path: filepath.Base(c.rewrite), content: "rebuilt for " + strings.Join(c.env, " ") + "\n"})
		idWantChanges(t, before, idCompute(t, spec), "$"+c.name)
		if got := before.Artifacts(); slices.ContainsFunc(got, func(a Artifact) bool { return strings.Contains(a.Path, "libhook") || strings.Contains(a.Path, "p.ts") }) {
			t.Errorf("%q: a path the variable names is recorded: %+v", c.env, got)
		}
	}
}

// A bare library name found nowhere is looked for where it would first
// be: creating it there later is new code. A FIFO named by LD_PRELOAD
// is never read (the identity would hang), and its digest says so.
func TestIdentityEnvNamedLibraryMissingOrFIFO(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	libs := idTempDir(t)
	spec := idSpec(dir, idFakeBin(t, "a"), "LD_PRELOAD=libnotyet-3f9a.so", "LD_LIBRARY_PATH="+libs)
	before := idCompute(t, spec)
	idWrite(t, libs, idFile{path: "libnotyet-3f9a.so", content: "\x7fELF late\n"})
	idWantChanges(t, before, idCompute(t, spec), "$LD_PRELOAD")

	fifo := filepath.Join(libs, "fifo.so")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	spec = idSpec(dir, idFakeBin(t, "a"), "LD_PRELOAD="+fifo)
	id := idCompute(t, spec)
	if got := envArtifact(t, id, "LD_PRELOAD").Digest; got != DigestBytes(envFilesInput(fifo, []string{fifo})) || !strings.Contains(string(envFilesInput(fifo, []string{fifo})), "not a regular file") {
		t.Errorf("$LD_PRELOAD naming a FIFO: digest %s", got)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
}

// A library the server's binary needs that the loader finds in an
// LD_LIBRARY_PATH directory, or that such a library needs in turn, is
// code the variable redirects: rebuilding it changes $LD_LIBRARY_PATH's
// digest. Another library in the directory, which nothing needs, does
// not. Built with the system's C compiler, linked for real.
func TestIdentityLibraryPathNeeded(t *testing.T) {
	t.Parallel()
	cc := testenv.Need(t, "cc", testenv.InstallCC)
	dir, libs := idTempDir(t), idTempDir(t)
	build := func(out string, args ...string) {
		t.Helper()
		if b, err := exec.Command(cc, append([]string{"-o", out}, args...)...).CombinedOutput(); err != nil {
			testenv.Missing(t, fmt.Sprintf("cc cannot build %s (%v): %s\n%s", out, err, testenv.InstallCC, b))
		}
	}
	src := func(name, content string) string {
		idWrite(t, libs, idFile{path: name, content: content})
		return filepath.Join(libs, name)
	}
	build(filepath.Join(libs, "libdeep.so"), "-shared", "-fPIC", src("deep.c", "int deep(void) { return 1; }\n"))
	build(filepath.Join(libs, "libhook.so"), "-shared", "-fPIC", src("hook.c", "int deep(void);\nint hook(void) { return deep(); }\n"), "-L"+libs, "-ldeep")
	build(filepath.Join(libs, "libunused.so"), "-shared", "-fPIC", src("unused.c", "int unused(void) { return 1; }\n"))
	build(filepath.Join(dir, "server"), src("main.c", "int hook(void);\nint main(void) { return hook() - 1; }\n"), "-L"+libs, "-Wl,-rpath-link,"+libs, "-lhook")
	spec := Spec{Dir: dir, Command: []string{"./server"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=" + libs}}
	before := idCompute(t, spec)
	if a := envArtifact(t, before, "LD_LIBRARY_PATH"); !strings.Contains(a.Why, "libraries the server's binary needs") {
		t.Errorf("$LD_LIBRARY_PATH why %q", a.Why)
	}
	build(filepath.Join(libs, "libunused.so"), "-shared", "-fPIC", src("unused.c", "int unused(void) { return 2; }\n"))
	idWantChanges(t, before, idCompute(t, spec))
	for _, lib := range []string{"deep", "hook"} {
		build(filepath.Join(libs, "lib"+lib+".so"), "-shared", "-fPIC", src(lib+".c", "int deep(void);\nint "+lib+"(void) { return 1; }\nint "+lib+"2(void) { return 2; }\n"), "-L"+libs)
		next := idCompute(t, spec)
		idWantChanges(t, before, next, "$LD_LIBRARY_PATH")
		before = next
	}
}
