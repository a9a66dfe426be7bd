package testenv

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv", "testenv.go")); err != nil {
		t.Fatalf("RepoRoot = %s, which does not hold this package: %v", root, err)
	}
}

func TestDeclares(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/mcpepoch/mcpepoch\n\ngo 1.26.0\n", true},
		{"// comment\nmodule \"github.com/mcpepoch/mcpepoch\"\n", true},
		{"module github.com/mcpepoch/mcpepoch/examples/inventory-go\n", false},
		{"go 1.26.0\n", false},
	} {
		if got := declares([]byte(tc.gomod), modulePath); got != tc.want {
			t.Errorf("declares(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
}

// TestDriverDirect drives the example server with no host in between: the
// client lists, calls, reports events and closes.
func TestDriverDirect(t *testing.T) {
	t.Parallel()
	dir := NodeExample(t)
	if _, err := os.Stat(filepath.Join(dir, "dist", "server.js")); err != nil {
		t.Fatalf("NodeExample did not build: %v", err)
	}
	c := Driver(t, dir, []string{"INVENTORY_DATA_DIR=" + filepath.Join(dir, "data")}, "node", "dist/server.js")
	tools, rerr := c.List()
	if rerr != nil {
		t.Fatal(rerr)
	}
	if got := strings.Join(ToolNames(tools), ","); got != "inventory_lookup,inventory_adjust,inventory_order" {
		t.Errorf("tools = %s", got)
	}
	res, rerr := c.Call("inventory_adjust", map[string]any{"sku": "bolt", "delta": 3})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if got, want := res.Text(), "sku=bolt quantity=3 revision=A"; got != want || res.IsError {
		t.Errorf("adjust = %q (isError %v), want %q", got, res.IsError, want)
	}
	p1 := c.CallAsync("inventory_lookup", map[string]any{"sku": "bolt"})
	p2 := c.CallAsync("inventory_lookup", map[string]any{"sku": "nut"})
	if r, e := p2.Wait(); e != nil || r.Text() != "sku=nut quantity=0 revision=A" {
		t.Errorf("lookup nut = %+v, %v", r, e)
	}
	if r, e := p1.Wait(); e != nil || r.Text() != "sku=bolt quantity=3 revision=A" {
		t.Errorf("lookup bolt = %+v, %v", r, e)
	}
	// An invalid argument is a JSON-RPC error or a tool error, depending on
	// the SDK; either way it must come back, not hang.
	if r, e := c.Call("inventory_lookup", map[string]any{"sku": ""}); e == nil && !r.IsError {
		t.Errorf("lookup with an empty sku succeeded: %+v", r)
	}
	if n, err := c.WaitListChanged(1, 200*time.Millisecond); err == nil {
		t.Errorf("WaitListChanged(1) = %d, want a timeout: the server sends no list_changed", n)
	}
	ev := c.Events()
	if ev.ListChanged != 0 || len(ev.Errors) != 0 || ev.Closed {
		t.Errorf("events = %+v", ev)
	}
	if !strings.Contains(c.Stderr(), "inventory-node revision=A") {
		t.Errorf("server stderr not captured: %q", c.Stderr())
	}
	c.Close()
	if !c.Exited() {
		t.Error("driver still running after Close")
	}
}

func TestMcpepoch(t *testing.T) {
	t.Parallel()
	p := Mcpepoch(t)
	if p2 := Mcpepoch(t); p2 != p {
		t.Errorf("second build at %s, first at %s", p2, p)
	}
	out, code := Run(t, t.TempDir(), nil, p, "version")
	if code != 0 || !strings.HasPrefix(out.Stdout, "mcpepoch ") {
		t.Errorf("mcpepoch version: exit %d, %q", code, out)
	}
}

// TestBuildLinksOnce: a second build of an unchanged package, as the
// test process of another package makes it, keeps the binary the first
// one wrote (go build only touches it): go test ./... links it once.
func TestBuildLinksOnce(t *testing.T) {
	t.Parallel()
	root := RepoRoot(t)
	p1, err := buildShared(root, installPkgs, "mcpepochtest", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Held open, the first file keeps its inode: a new file written in
	// its place cannot get the same one.
	f, err := os.Open(p1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := buildShared(root, installPkgs, "mcpepochtest", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.Stat(p2)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || !os.SameFile(first, second) {
		t.Errorf("second build wrote a new file at %s (first at %s): want the first one kept", p2, p1)
	}
	if p1 != filepath.Join(sharedDir(root), "cmd-mcpepoch+mcpepochtest", "mcpepoch") {
		t.Errorf("binary at %s, want it named mcpepoch in the shared directory %s", p1, sharedDir(root))
	}
}

// TestBuildRefusesOpenDirectory: a shared directory that others may
// write to (or that is not the user's) is never built into or run from.
func TestBuildRefusesOpenDirectory(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root := RepoRoot(t)
	if err := os.Mkdir(sharedDir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sharedDir(root), 0o777); err != nil {
		t.Fatal(err)
	}
	if p, err := buildShared(root, installPkgs, "mcpepochtest", nil); err == nil || !strings.Contains(err.Error(), "closed to others") {
		t.Errorf("build into a directory of mode 0777: %s, %v; want an error", p, err)
	}
}

func TestTask(t *testing.T) {
	t.Parallel()
	p := Task(t)
	out, code := Run(t, t.TempDir(), nil, p, "--version")
	if code != 0 || !strings.Contains(out.Combined, "3.") {
		t.Errorf("task --version: exit %d, %q", code, out)
	}
}

func TestRunExitCode(t *testing.T) {
	t.Parallel()
	out, code := Run(t, t.TempDir(), []string{"X=42"}, "sh", "-c", `echo out; echo err >&2; exit $X`)
	if code != 42 || out.Stdout != "out\n" || out.Stderr != "err\n" {
		t.Errorf("Run = %+v, %d", out, code)
	}
}

func TestGroupGone(t *testing.T) {
	t.Parallel()
	// The leader forks a child it never reaps, reports the child's pid,
	// then becomes a long sleep. The child blocks reading fd 3 until the
	// test closes the pipe's other end, which it does only once the leader
	// is sleep: a child that ended while the leader was still the shell
	// could be reaped by the shell before its exec, and no zombie be left.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd := exec.Command("sh", "-c", `read x <&3 & echo $!; exec sleep 30`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = []*os.File{r}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	pgid := cmd.Process.Pid
	reaped := false // then pgid may be another process's group
	t.Cleanup(func() {
		if !reaped {
			syscall.Kill(-pgid, syscall.SIGKILL)
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if gone, _ := GroupGone(pgid); gone {
		t.Fatal("GroupGone = true for a running group")
	}
	child := strings.TrimSpace(line)
	if zombieTest {
		waitExec(t, pgid, "sleep")
	}
	w.Close() // the child reads EOF and ends
	if zombieTest {
		deadline := time.Now().Add(5 * time.Second)
		for !isZombie(t, child) {
			if time.Now().After(deadline) {
				t.Fatalf("child %s never became a zombie", child)
			}
			time.Sleep(10 * time.Millisecond)
		}
		_, detail := GroupGone(pgid)
		if strings.Contains(detail, "pid "+child+" ") {
			t.Errorf("zombie %s reported as live: %s", child, detail)
		}
		if !strings.Contains(detail, "(sleep)") {
			t.Errorf("live leader not reported: %s", detail)
		}
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	reaped = true
	// The zombie child, reparented, may linger until its new parent reaps
	// it; the group counts as gone all the same.
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone, detail := GroupGone(pgid)
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d not gone 5 s after SIGKILL: %s", pgid, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMissingFailsInCI runs a test that needs a missing program in a child
// test process: with CI=true it fails, naming the program; without CI it is
// skipped with the same reason.
func TestMissingFailsInCI(t *testing.T) {
	t.Parallel()
	if os.Getenv("TESTENV_MISSING_CHILD") == "1" {
		Missing(t, "frobnicate is not on PATH")
		t.Fatal("Missing returned")
	}
	for _, tc := range []struct {
		ci, want string
		fails    bool
	}{
		{"true", "--- FAIL: TestMissingFailsInCI", true},
		{"1", "--- FAIL: TestMissingFailsInCI", true},
		{"", "--- SKIP: TestMissingFailsInCI", false},
		{"false", "--- SKIP: TestMissingFailsInCI", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingFailsInCI$", "-test.v")
		cmd.Env = append(Environ(), "TESTENV_MISSING_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.fails || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "frobnicate is not on PATH") {
			t.Errorf("CI=%q: exit %v, want failure %v and %q with the reason\n%s", tc.ci, err, tc.fails, tc.want, out)
		}
	}
}

// TestNeed: a program on PATH is returned; one that is not ends the test
// (run in a child test process) with a skip, or a failure under CI, that
// names the program and how to install it.
func TestNeed(t *testing.T) {
	t.Parallel()
	if os.Getenv("TESTENV_NEED_CHILD") == "1" {
		Need(t, "mcpepoch-frobnicate", "apt-get install frobnicate")
		t.Fatal("Need returned")
	}
	if p := Need(t, "sh", "install a shell"); !filepath.IsAbs(p) {
		t.Errorf("Need(sh) = %q, want an absolute path", p)
	}
	for _, tc := range []struct {
		ci, want string
		fails    bool
	}{
		{"true", "--- FAIL: TestNeed", true},
		{"", "--- SKIP: TestNeed", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeed$", "-test.v")
		cmd.Env = append(Environ(), "TESTENV_NEED_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.fails || !strings.Contains(string(out), tc.want) ||
			!strings.Contains(string(out), "mcpepoch-frobnicate is not on PATH: apt-get install frobnicate to run this test") {
			t.Errorf("CI=%q: exit %v, want failure %v and %q naming the program and how to install it\n%s", tc.ci, err, tc.fails, tc.want, out)
		}
	}
}

// npmLockHeld holds the lock NPM takes for dir until the test ends.
func npmLockHeld(t *testing.T, dir string) {
	t.Helper()
	sum := sha256.Sum256([]byte(dir))
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "mcpepoch-testenv-npm-"+hex.EncodeToString(sum[:6])+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := flock(f); err != nil {
		t.Fatal(err)
	}
}

// TestNPMLockPerDirectory: an npm ci under way in one directory (its lock
// held) does not hold up NPM for another, already installed, directory.
func TestNPMLockPerDirectory(t *testing.T) {
	t.Parallel()
	LookNode(t)
	busy, dir := t.TempDir(), t.TempDir()
	npmLockHeld(t, busy)
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", ".package-lock.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NPM(t, dir)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("NPM for an installed directory waited for the lock of another directory")
	}
}

// TestBuildFlags: flags make a binary of their own, built with them, beside
// the one without.
func TestBuildFlags(t *testing.T) {
	t.Parallel()
	plain := Build(t, "./examples/inventory-go")
	withB := BuildFlags(t, "./examples/inventory-go", "-ldflags=-X main.revision=B")
	if plain == withB || filepath.Dir(filepath.Dir(plain)) != filepath.Dir(filepath.Dir(withB)) {
		t.Fatalf("BuildFlags wrote %s, Build %s: want two binaries in the shared directory", withB, plain)
	}
	for bin, want := range map[string]string{plain: "revision=A ", withB: "revision=B "} {
		cmd := exec.Command(bin) // stdin at EOF: the server starts, logs and ends
		cmd.Env = append(Environ(), "INVENTORY_DATA_DIR="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) {
			t.Errorf("%s logs no %q:\n%s", bin, want, out)
		}
	}
}
