package main

// End-to-end tests of "running ≠ built" after failed builds: real compilers
// (tsc, go build) failing, real hosts and servers.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// typeOnlyError is a TypeScript error that changes no emitted JavaScript:
// tsc reports it and writes the same dist/server.js.
const typeOnlyError = "\ntype Broken = NoSuchType;\n"

// A tsc run that fails on a type-only error leaves dist/server.js
// byte-identical to the last successful build: the running server is what
// was built, and neither record nor status says otherwise. (A node that
// loads TypeScript itself could load the edited source: there the source
// is code of the epoch, and the edit is drift.)
func TestNoDriftAfterTypeOnlyError(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.host()
	p.record()
	entry, _ := sha256File(t, p.path("dist/server.js"))

	p.edit(func(s string) string { return s + typeOnlyError })
	out, code := p.tsc()
	if code == 0 {
		t.Fatalf("tsc accepts the type error:\n%s", out)
	}
	if now, _ := sha256File(t, p.path("dist/server.js")); now != entry {
		t.Fatal("the failed tsc run changed dist/server.js: this test needs it byte-identical")
	}
	stderr := p.record("--exit-code", strconv.Itoa(code))
	wantLine(t, stderr, "build failed (exit "+strconv.Itoa(code)+"): no server restarts for it")
	if strings.Contains(stderr, "running ≠ built") != nodeLoadsTS(t) {
		t.Errorf("record after a failed build that changed only the source (node loads TypeScript: %v):\n%s", nodeLoadsTS(t), stderr)
	}
	if d := p.onlyHost().Drift; nodeLoadsTS(t) != (len(d) != 0) {
		t.Errorf("status drift after a failed build that changed only the source: %q (node loads TypeScript: %v)", d, nodeLoadsTS(t))
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=A"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
}

// A Go compile error leaves the old binary in place: no drift. A failed
// build that did write a new binary (a later step failed), onto which the
// server is then restarted by hand, is drift: what runs differs from the
// last successful build.
func TestDriftOnlyWhenRunningDiffersFromLastSuccess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skipf("the test waits for /proc/<pid>/exe observations, which %s does not have", runtime.GOOS)
	}
	dir := ideTempDir(t)
	srv := filepath.Join(dir, "bin", "srv")
	ideGoBuild(t, srv)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"failed\"\ncommand = [\"./bin/srv\"]\n", 0o644)
	ideMust(t, dir, nil, "record")
	cs, _ := ideHost(t, dir, []string{"INVENTORY_DATA_DIR=" + filepath.Join(dir, "data")}, "--", "./bin/srv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	ideWaitStatus(t, dir, "the running server observed", func(s ideStatus) bool { return s.Running != nil && s.Running.ExeDigest != "" })

	// A real compile error: go build exits 1 and leaves bin/srv alone.
	broken := t.TempDir()
	ideWrite(t, broken, "go.mod", "module broken\n\ngo 1.26\n", 0o644)
	ideWrite(t, broken, "main.go", "package main\n\nfunc main() { undefinedCall() }\n", 0o644)
	gb := exec.CommandContext(ctx, "go", "build", "-o", srv, ".")
	gb.Dir = broken
	if b, err := gb.CombinedOutput(); err == nil {
		t.Fatalf("go build of a compile error succeeded:\n%s", b)
	}
	_, e := ideMust(t, dir, nil, "record", "--exit-code", "1")
	if strings.Contains(e, "running ≠ built") {
		t.Errorf("record after a compile error that left the binary alone:\n%s", e)
	}
	if s, _ := ideOnlyStatus(t, dir); len(s.Drift) != 0 {
		t.Errorf("status drift after a compile error that left the binary alone: %q", s.Drift)
	}

	// A failed build that wrote a new binary, and a restart onto it.
	ideGoBuild(t, srv+".new", "-ldflags=-X main.revision=C")
	if err := os.Rename(srv+".new", srv); err != nil {
		t.Fatal(err)
	}
	ideMust(t, dir, nil, "record", "--exit-code", "1")
	ideMust(t, dir, nil, "restart")
	failed := ideSHA256(t, srv)
	s := ideWaitStatus(t, dir, "the restarted server observed", func(s ideStatus) bool {
		return s.Running != nil && s.Running.ExeDigest == failed
	})
	if len(s.Drift) != 1 || !strings.Contains(s.Drift[0], "running ≠ built: the last successful build ") ||
		!strings.Contains(s.Drift[0], "; the running epoch started from "+failed+", as the failed build ") {
		t.Errorf("drift after a restart onto a failed build's binary: %q", s.Drift)
	}
}

// A failed build that left changed code on disk: the running epoch's
// grants are revoked (drift), and record says so, names a build that
// succeeds as the way out, and does not advise mcpepoch restart, which
// would start the code that failed to build.
func TestFailedBuildDriftSaysWhy(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`)
	c := p.host()
	p.record()
	call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"})
	js := p.path("dist/server.js")
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(js, append(b, "\n// half-written\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := p.record("--exit-code", "2")
	wantLine(t, stderr, "build failed (exit 2): no server restarts for it")
	if !strings.Contains(stderr, "the last build failed, so fix the code: a build that succeeds starts an epoch on the new code, then approve the renewal") ||
		strings.Contains(stderr, "or mcpepoch restart starts") {
		t.Errorf("record after a failed build that changed the code:\n%s", stderr)
	}
	if _, rerr := c.Call("inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); rerr == nil ||
		!strings.Contains(rerr.Error(), "identity_drift") || !strings.Contains(rerr.Error(), "a build that succeeds starts an epoch on the new code, and that epoch can be approved (the last build failed") ||
		strings.Contains(rerr.Error(), "or mcpepoch restart starts") {
		t.Errorf("adjust after the failed build: %v", rerr)
	}
}
