// Package testenv gives mcpepoch's end-to-end tests the real programs they
// drive: the mcpepoch binary, npm-installed Node projects, the example
// server built from source, the go-task CLI, and a scripted MCP client
// (testdata/node/driver.mjs, see [Driver]).
//
// Every helper takes the calling test and fails it (t.Fatal) when the
// machine has the program but it does not work. When a program is not
// installed at all it says which and how to get it, and skips the test, or
// fails it in CI, which installs them all (see [Missing]). Every process it
// starts is bounded by a timeout and is killed in t.Cleanup, so a test
// cannot hang on it.
package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// modulePath is the module whose go.mod marks the repository root.
const modulePath = "github.com/mcpepoch/mcpepoch"

// CommandTimeout bounds every command run by [Run], and npm ci and tsc.
const CommandTimeout = 3 * time.Minute

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory whose go.mod declares module
// github.com/mcpepoch/mcpepoch.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && declares(b, modulePath) {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod of module %s at or above %s", modulePath, dir)
		}
	}
}

// declares reports whether go.mod content b declares module path.
func declares(b []byte, path string) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// LookNode returns the paths of node and npm; when either is not on PATH
// it ends the test with [Missing].
func LookNode(t testing.TB) (node, npm string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Missing(t, "node is not on PATH: install Node.js 20 or later (with npm) to run this test")
	}
	npm, err = exec.LookPath("npm")
	if err != nil {
		Missing(t, "npm is not on PATH: install npm (it ships with Node.js) to run this test")
	}
	return node, npm
}

// NPM makes sure dir/node_modules holds what dir/package-lock.json pins: it
// runs "npm ci" in dir when node_modules/.package-lock.json (npm's own
// record of an install) is missing or older than package-lock.json. Test
// processes of several packages may call it at once, so the check and the
// install run under an exclusive flock of mcpepoch-testenv-npm-<h>.lock in
// os.TempDir(), h a digest of dir's absolute path: one lock per directory,
// so that an npm ci in one checkout never holds up the tests of another.
// A failing npm ci fails the test with npm's output.
func NPM(t testing.TB, dir string) {
	t.Helper()
	_, npm := LookNode(t)
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(abs))
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "mcpepoch-testenv-npm-"+hex.EncodeToString(sum[:6])+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := flock(lock); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	want, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if have, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !have.ModTime().Before(want.ModTime()) {
		return
	}
	t.Logf("npm ci in %s", dir)
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// flock takes an exclusive lock on f, retrying when interrupted.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// exampleFiles are the files of examples/inventory-node that NodeExample
// copies (patterns of filepath.Match; directories are copied whole).
var exampleFiles = []string{
	"src", "package.json", "package-lock.json", "tsconfig.json",
	"Taskfile.yml", "Makefile", "mcpepoch.*", ".gitignore",
}

// NodeExample returns a new project directory (absolute, symlinks resolved)
// holding a built copy of examples/inventory-node: see [NodeExampleAt].
func NodeExample(t testing.TB) string {
	t.Helper()
	return NodeExampleAt(t, t.TempDir())
}

// NodeExampleAt copies examples/inventory-node (src/, package.json,
// package-lock.json, tsconfig.json, Taskfile.yml, Makefile, mcpepoch.*,
// .gitignore; not dist/, data/ or node_modules/) into dir, creating dir,
// links dir/node_modules to the example's own node_modules (installed with
// [NPM]), and gives it dist/, what node_modules/.bin/tsc compiles from
// those sources, so that dist/server.js exists. tsc runs once per test
// process (see [compiledExample]); every copy gets its own new files. It
// returns dir, absolute with symlinks resolved.
func NodeExampleAt(t testing.TB, dir string) string {
	t.Helper()
	src := filepath.Join(RepoRoot(t), "examples", "inventory-node")
	NPM(t, src)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := copyExample(src, dir); err != nil {
		t.Fatal(err)
	}
	dist, err := compiledExample(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := copyTree(dist, filepath.Join(dir, "dist")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyExample copies the exampleFiles of src into dir and links
// dir/node_modules to src/node_modules.
func copyExample(src, dir string) error {
	for _, pat := range exampleFiles {
		matches, err := filepath.Glob(filepath.Join(src, pat))
		if err != nil {
			return err
		}
		if len(matches) == 0 {
			return fmt.Errorf("%s: no file matches %s", src, pat)
		}
		for _, m := range matches {
			if err := copyTree(m, filepath.Join(dir, filepath.Base(m))); err != nil {
				return err
			}
		}
	}
	return os.Symlink(filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules"))
}

// example is examples/inventory-node compiled once per test process.
var example struct {
	once sync.Once
	dist string
	err  error
}

// compiledExample returns the dist/ directory of a copy of the example at
// src compiled with tsc, in os.TempDir()/mcpepoch-testenv-<pid> (removed
// with the binary's, see [Mcpepoch]). It compiles on the first call only; a
// failed compile fails every test that asks.
func compiledExample(src string) (string, error) {
	example.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "mcpepoch-testenv-"+strconv.Itoa(os.Getpid()), "inventory-node")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			example.err = err
			return
		}
		if err := copyExample(src, dir); err != nil {
			example.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "tsc"))
		cmd.Dir = dir
		cmd.Env = Environ()
		if out, err := cmd.CombinedOutput(); err != nil {
			example.err = fmt.Errorf("tsc in %s: %v\n%s", dir, err, out)
			return
		}
		example.dist = filepath.Join(dir, "dist")
	})
	return example.dist, example.err
}

// copyTree copies the regular file or directory tree from to to, keeping
// permission bits.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		}
		return fmt.Errorf("%s: not a regular file or directory", p)
	})
}

// Output is what [Run] saw of a command: both streams as they came, and each
// on its own.
type Output struct {
	Combined string
	Stdout   string
	Stderr   string
}

func (o Output) String() string { return o.Combined }

// Run runs name with args in dir, with the test's environment minus
// MCPEPOCH and MCPEPOCH_FLAGS, plus env ("KEY=value"), bounded by
// CommandTimeout. It returns the output and the exit status; a command that
// cannot start, or runs out of time, fails the test.
func Run(t testing.TB, dir string, env []string, name string, args ...string) (Output, int) {
	t.Helper()
	return RunWithin(t, CommandTimeout, dir, env, name, args...)
}

// Buffer is a bytes.Buffer safe for concurrent writes and reads: a child
// process's output, read by a test while the process runs.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Mcpepoch returns the path of the mcpepoch binary, built from
// ./cmd/mcpepoch of this repository checkout with -tags mcpepochtest,
// shared as [Build] shares binaries. The tag adds the test-only seams (a
// person standing in for a first enrollment, trusted attestation roots
// of the tests' own); a product build has none.
func Mcpepoch(t testing.TB) string {
	t.Helper()
	return build(t, installPkgs, "mcpepochtest", nil)
}

// installPkgs are the main packages of an install of mcpepoch.
var installPkgs = []string{"./cmd/mcpepoch"}

// built holds, per main package, the binary Build made in this process.
var built struct {
	sync.Mutex
	once map[string]*builtOnce
}

type builtOnce struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of a binary built from the main package pkg
// ("./cmd/mcpepoch", relative to the repository root). The test processes
// of every package share one copy of it, in
// os.TempDir()/mcpepoch-testenv-bin-<h>/ where h is a digest of the
// repository root's path: each process runs go build -o on it once, under
// an exclusive flock of that directory's lock file, and go build relinks
// only when the binary's build ID does not match the sources, flags and
// toolchain (cmd/go's own staleness check). So go test ./... links it
// once, and a later run only if something changed. The binary has the
// name go build gives it (the last element of pkg), in a directory named
// after pkg's path. A failed build fails every test that asks.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, []string{pkg}, "", nil)
}

// BuildFlags is [Build] with more go build flags, such as
// "-ldflags=-X main.revision=B": one shared binary per package and flags,
// in a directory named after both (a digest of the flags). Tests copy it
// where they need a file of their own.
func BuildFlags(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	return build(t, []string{pkg}, "", flags)
}

// build is [Build] of the main packages pkgs, built together by one go
// build into one directory, with -tags tags (none when empty) and flags.
// It returns the path of the first package's binary.
func build(t testing.TB, pkgs []string, tags string, flags []string) string {
	t.Helper()
	root := RepoRoot(t)
	key := strings.Join(pkgs, " ") + " " + tags + " " + strings.Join(flags, "\x00")
	built.Lock()
	if built.once == nil {
		built.once = map[string]*builtOnce{}
		removeStaleBinaries()
	}
	b := built.once[key]
	if b == nil {
		b = &builtOnce{}
		built.once[key] = b
	}
	built.Unlock()
	b.once.Do(func() {
		b.path, b.err = buildShared(root, pkgs, tags, flags)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildShared builds the main packages pkgs of the module at root, with
// -tags tags when not empty and flags, in one go build into
// sharedDir(root)/PKG/ (PKG: the first package's path with dashes for
// slashes, then "+tags" when tags are given, then "@" and a digest of
// flags when there are any; each binary named after the last element of
// its package's path) under sharedDir's lock, and returns the first
// binary's path. A
// binary already there is kept when go build finds it up to date. A stale
// one is replaced by a new file (renamed over, or removed and written), so
// a process still running the old one keeps it. The directory must be
// the user's own and closed to others: a binary planted by someone else
// is never run.
func buildShared(root string, pkgs []string, tags string, flags []string) (string, error) {
	dir := sharedDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if fi, err := os.Lstat(dir); err != nil {
		return "", err
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: not a directory of this user closed to others (mode %v): remove it", dir, fi.Mode())
	}
	rel := filepath.ToSlash(filepath.Clean(pkgs[0]))
	sub := strings.ReplaceAll(rel, "/", "-")
	args := []string{"build"}
	if tags != "" {
		sub += "+" + strings.ReplaceAll(tags, ",", "+")
		args = append(args, "-tags", tags)
	}
	if len(flags) > 0 {
		sum := sha256.Sum256([]byte(strings.Join(flags, "\x00")))
		sub += "@" + hex.EncodeToString(sum[:6])
		args = append(args, flags...)
	}
	out := filepath.Join(dir, sub, path.Base(rel))
	args = append(args, "-o", filepath.Dir(out)+string(filepath.Separator))
	args = append(args, pkgs...)
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := flock(lock); err != nil {
		return "", fmt.Errorf("lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out, nil
}

// sharedDir is the directory of the binaries that the test processes of
// the repository checkout at root share: one per checkout, so that two
// worktrees never replace each other's binary.
func sharedDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(os.TempDir(), "mcpepoch-testenv-bin-"+hex.EncodeToString(sum[:6]))
}

// removeStaleBinaries removes os.TempDir()/mcpepoch-testenv-<pid>
// directories (the example compiled per process, see [compiledExample])
// whose process is gone.
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mcpepoch-testenv-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "mcpepoch-testenv-"))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// TaskVersion is the go-task release the tests are written against.
const TaskVersion = "v3.54.0"

// Task returns the path of the go-task CLI: "task" on PATH, else
// $(go env GOPATH)/bin/task. When neither exists it ends the test with
// [Missing].
func Task(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("task"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, gp := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(gp, "bin", "task")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	Missing(t, "task CLI not installed: go install github.com/go-task/task/v3/cmd/task@"+TaskVersion)
	return ""
}

// PythonServer returns the source of testdata/servers/python/NAME.py, a
// stdio MCP server in plain Python that tests of several packages copy
// into their projects (lazy.py: tools read, which imports app.impl at its
// first call, and ping; tmpdir.py: tool tmp, which answers its TMPDIR).
func PythonServer(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "testdata", "servers", "python", name+".py"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// HoldSlots keeps n connections to the unix socket sock open, each with
// the start of a request written and never finished, dialling again
// whenever the listener drops one, until ctx ends: what a client that
// hogs every connection a host serves does. It returns once the first
// connection is held (or ctx ended), with wait, which returns once every
// connection is closed after ctx ends.
func HoldSlots(ctx context.Context, sock string, n int) (wait func()) {
	var wg sync.WaitGroup
	held := make(chan struct{}, 1)
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := net.Dial("unix", sock)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				c.Write([]byte(`{"v":1,"type":"sta`))
				select {
				case held <- struct{}{}:
				default:
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				io.Copy(io.Discard, c) // until the listener drops it
				stop()
				c.Close()
			}
		})
	}
	select {
	case <-held:
	case <-ctx.Done():
	}
	return wg.Wait
}
