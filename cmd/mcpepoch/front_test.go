package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// shortRoot is a project directory with a path short enough for the
// host's socket, symlinks resolved.
func shortRoot(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	root, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// install copies the binaries at the paths given into a new directory,
// each under the name given, and returns the directory.
func install(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, from := range files {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFrontBecomesCoreForHost: `mcpepoch host` started through the front
// is the core in the same process (the pid a client started is the
// host's: the server's parent), with the front's argv[0], and the
// variable by which the front names its build does not reach the server.
func TestFrontBecomesCoreForHost(t *testing.T) {
	t.Parallel()
	front := testenv.Mcpepoch(t)
	root := shortRoot(t)
	writeFiles(t, root, map[string]string{
		"mcpepoch.toml": "label = \"front\"\ncommand = [\"sh\", \"server.sh\"]\n",
		"server.sh":     "env > env.txt\necho $PPID > ppid.new && mv ppid.new ppid\nexec cat\n",
	})
	// Through a symlink, as npm's and Homebrew's links start it.
	link := filepath.Join(t.TempDir(), "mcpepoch")
	if err := os.Symlink(front, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "host", "--dir", root)
	cmd.Env = testenv.Environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.KillOnCleanup(t, cmd.Process.Pid)
	ppid := ""
	for deadline := time.Now().Add(testenv.CommandTimeout); ppid == "" && time.Now().Before(deadline); {
		b, _ := os.ReadFile(filepath.Join(root, "ppid"))
		ppid = strings.TrimSpace(string(b))
		time.Sleep(20 * time.Millisecond)
	}
	if ppid != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("the server's parent is %q, want the pid the front was started as, %d; host stderr:\n%s", ppid, cmd.Process.Pid, stderr.String())
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err == nil && filepath.Base(exe) != "mcpepoch-core" {
		t.Errorf("process %d runs %s, want the core", cmd.Process.Pid, exe)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"); err == nil {
		if argv0, _, _ := strings.Cut(string(b), "\x00"); argv0 != link {
			t.Errorf("the host's argv[0] is %q, want the front's %q", argv0, link)
		}
	}
	env, err := os.ReadFile(filepath.Join(root, "env.txt"))
	if err != nil || strings.Contains(string(env), "MCPEPOCH_FRONT") {
		t.Errorf("the server's environment (%v):\n%s\nwant no MCPEPOCH_FRONT", err, env)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("host: %v\n%s", err, stderr.String())
	}
}

// TestFrontSaysWhatCoreSays: for commands the front does not run itself
// (help, an unknown command, status), its output and exit status are the
// core's, byte for byte.
func TestFrontSaysWhatCoreSays(t *testing.T) {
	t.Parallel()
	front := testenv.Mcpepoch(t)
	core := filepath.Join(filepath.Dir(front), "mcpepoch-core")
	root := shortRoot(t)
	writeFiles(t, root, map[string]string{"mcpepoch.toml": "label = \"front\"\ncommand = [\"sh\", \"server.sh\"]\n"})
	for _, args := range [][]string{{}, {"help"}, {"frobnicate"}, {"status", "--dir", root}, {"status", "--dir", root, "--json"}, {"record", "--bogus"}} {
		f, fcode := testenv.Run(t, root, []string{"NO_COLOR=1"}, front, args...)
		c, ccode := testenv.Run(t, root, []string{"NO_COLOR=1"}, core, args...)
		if f.Stdout != c.Stdout || f.Stderr != c.Stderr || fcode != ccode {
			t.Errorf("mcpepoch %q: front exit %d\n%s\ncore exit %d\n%s", args, fcode, f.Combined, ccode, c.Combined)
		}
	}
}

// TestFrontWithoutCore: a front with no core beside it runs version and
// record, and fails every other command with exit 2 and one sentence
// naming both paths and the fix; asked for help, or given no command, it
// prints the list of commands before that sentence.
func TestFrontWithoutCore(t *testing.T) {
	t.Parallel()
	dir := install(t, map[string]string{"mcpepoch": testenv.Mcpepoch(t)})
	front := filepath.Join(dir, "mcpepoch")
	out, code := testenv.Run(t, dir, nil, front, "status")
	want := "mcpepoch: error: " + filepath.Join(dir, "mcpepoch-core") + ", which runs every command but version and record, is missing beside " +
		front + " (no such file or directory): install both again (from a clone: go install ./cmd/...)\n"
	if code != 2 || out.Stderr != want || out.Stdout != "" {
		t.Errorf("status without a core: exit %d\nstdout %q\nstderr %q\nwant exit 2 and stderr %q", code, out.Stdout, out.Stderr, want)
	}
	if out, code := testenv.Run(t, dir, nil, front, "version"); code != 0 || !strings.HasPrefix(out.Stdout, "mcpepoch ") {
		t.Errorf("version without a core: exit %d\n%s", code, out.Combined)
	}
	for _, args := range [][]string{{}, {"help"}, {"--help"}, {"-h"}} {
		out, code := testenv.Run(t, dir, nil, front, args...)
		if code != 2 || out.Stdout != "" || !strings.HasPrefix(out.Stderr, "usage: mcpepoch <command> [flags]\n") ||
			!strings.Contains(out.Stderr, "\n  host [flags] -- CMD...") || !strings.HasSuffix(out.Stderr, want) {
			t.Errorf("mcpepoch %q without a core: exit %d\nstdout %q\nstderr %q\nwant exit 2, the usage, then %q", args, code, out.Stdout, out.Stderr, want)
		}
	}
}

// versionLine is what `BIN version` prints.
func versionLine(t *testing.T, bin string) string {
	t.Helper()
	out, code := testenv.Run(t, t.TempDir(), nil, bin, "version")
	if code != 0 {
		t.Fatalf("%s version: exit %d\n%s", bin, code, out.Combined)
	}
	return strings.TrimSuffix(out.Stdout, "\n")
}

// TestFrontRefusesCoreOfAnotherBuild: a core beside a front built with
// other settings (here without the tests' build tag) is not run: exit 2
// naming both, the fix, both version lines and what differs, before the
// core does anything; the same core beside its own front runs.
func TestFrontRefusesCoreOfAnotherBuild(t *testing.T) {
	t.Parallel()
	ours := testenv.Mcpepoch(t)
	core := filepath.Join(filepath.Dir(ours), "mcpepoch-core")
	other := testenv.Build(t, "./cmd/mcpepoch")
	dir := install(t, map[string]string{"mcpepoch": other, "mcpepoch-core": core})
	root := shortRoot(t)
	out, code := testenv.Run(t, root, nil, filepath.Join(dir, "mcpepoch"), "host", "--dir", root, "--", "sh", "-c", "touch ran")
	want := "mcpepoch: error: " + filepath.Join(dir, "mcpepoch-core") + " is not from the same build as " + filepath.Join(dir, "mcpepoch") +
		", which started it: install both again (from a clone: go install ./cmd/...)\n" +
		"mcpepoch: hint: front " + filepath.Join(dir, "mcpepoch") + ": " + versionLine(t, other) + "\n" +
		"mcpepoch: hint: core " + filepath.Join(dir, "mcpepoch-core") + ": " + versionLine(t, ours) + "\n" +
		"mcpepoch: hint: they differ: build setting -tags: \"mcpepochtest\" in the core, unset in the front\n"
	if code != 2 || out.Stderr != want {
		t.Errorf("host through a front of another build: exit %d\nstderr %q\nwant exit 2 and %q", code, out.Stderr, want)
	}
	if _, err := os.Stat(filepath.Join(root, ".mcpepoch")); err == nil {
		t.Errorf("the core of another build made %s before refusing", filepath.Join(root, ".mcpepoch"))
	}
	dir = install(t, map[string]string{"mcpepoch": ours, "mcpepoch-core": core})
	out, code = testenv.Run(t, root, nil, filepath.Join(dir, "mcpepoch"), "status", "--dir", root)
	if code != 3 || !strings.Contains(out.Stderr, "no host listening") {
		t.Errorf("status through a front of the same build: exit %d\n%s", code, out.Combined)
	}
}

// TestFrontSetsItsOwnFrontEnv: a caller's own MCPEPOCH_FRONT never reaches
// the core in place of the front's: the command runs as it would without
// it. The core started directly with a value it cannot verify (empty, no
// front path, another build's id) refuses, exit 2, before doing anything.
func TestFrontSetsItsOwnFrontEnv(t *testing.T) {
	t.Parallel()
	front := testenv.Mcpepoch(t)
	core := filepath.Join(filepath.Dir(front), "mcpepoch-core")
	root := shortRoot(t)
	writeFiles(t, root, map[string]string{"mcpepoch.toml": "label = \"front\"\ncommand = [\"sh\", \"server.sh\"]\n"})
	out, code := testenv.Run(t, root, []string{"MCPEPOCH_FRONT=0123456789ab /x"}, front, "status", "--dir", root)
	if code != 3 || !strings.Contains(out.Stderr, "no host listening") {
		t.Errorf("status through the front with the caller's MCPEPOCH_FRONT: exit %d\n%s", code, out.Combined)
	}
	for _, v := range []string{"", "0123456789ab", "0123456789ab " + front, " " + front} {
		out, code := testenv.Run(t, root, []string{"MCPEPOCH_FRONT=" + v}, core, "status", "--dir", root)
		if code != 2 || !strings.Contains(out.Stderr, "is not from the same build as") {
			t.Errorf("core with MCPEPOCH_FRONT=%q: exit %d\n%s\nwant exit 2, not from the same build", v, code, out.Combined)
		}
	}
}

// TestFrontRefusesForeignCore: a Go program of this module's path that is
// not its cmd/mcpepoch-core, installed as mcpepoch-core beside the front,
// is never run: exit 2 saying which program it is.
func TestFrontRefusesForeignCore(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"go.mod":  "module github.com/mcpepoch/mcpepoch\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"foreign core ran\") }\n",
	})
	dir := install(t, map[string]string{"mcpepoch": testenv.Mcpepoch(t)})
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "mcpepoch-core"), ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, code := testenv.Run(t, dir, nil, filepath.Join(dir, "mcpepoch"), "status")
	if code != 2 || strings.Contains(out.Combined, "foreign core ran") ||
		!strings.Contains(out.Stderr, "mcpepoch: hint: they differ: the core is the program github.com/mcpepoch/mcpepoch, not github.com/mcpepoch/mcpepoch/cmd/mcpepoch-core\n") {
		t.Errorf("status beside a foreign mcpepoch-core: exit %d\n%s", code, out.Combined)
	}
}

// TestFrontInNPMPackageSaysNPMFix: a front inside an npm platform package
// (node_modules/@mcpepoch/PLATFORM/bin) names the npm packages as the fix,
// for a core missing and for one of another build.
func TestFrontInNPMPackageSaysNPMFix(t *testing.T) {
	t.Parallel()
	ours := testenv.Mcpepoch(t)
	bin := filepath.Join(t.TempDir(), "node_modules", "@mcpepoch", "linux-x64", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	front := filepath.Join(bin, "mcpepoch")
	if err := os.WriteFile(front, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// Both tarballs by name: the packages are not on the registry, where
	// the bare name would fetch someone else's.
	fix := regexp.MustCompile(`: reinstall both npm tarballs \(npm i -D DIR/mcpepoch-(V|[0-9.]+)\.tgz DIR/mcpepoch-linux-x64-(V|[0-9.]+)\.tgz, which bash scripts/npm-pack.sh DIR builds in a clone\)\n`)
	out, code := testenv.Run(t, bin, nil, front, "status")
	if code != 2 || !strings.Contains(out.Stderr, "is missing beside "+front) || !fix.MatchString(out.Stderr) {
		t.Errorf("status in an npm package without a core: exit %d\n%s", code, out.Combined)
	}
	other, err := os.ReadFile(testenv.Build(t, "./cmd/mcpepoch-core"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "mcpepoch-core"), other, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.Run(t, bin, nil, front, "status")
	if code != 2 || !strings.Contains(out.Stderr, "is not from the same build as "+front+", which started it: reinstall both npm tarballs") || !fix.MatchString(out.Stderr) {
		t.Errorf("status in an npm package with a core of another build: exit %d\n%s", code, out.Combined)
	}
}
