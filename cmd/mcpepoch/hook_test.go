package main

// The build hook as users run it: the example's own Taskfile (record in a
// defer:) under the real go-task, and its Makefile under the real make, with
// a host and a client connected throughout.

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

func TestTaskBuildHook(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	testBuildHook(t, func(p *project) (testenv.Output, int) {
		p.t.Helper()
		return testenv.Run(p.t, p.dir, []string{"MCPEPOCH=" + p.bin, "NO_COLOR=1"}, task, "build")
	})
}

func TestMakeBuildHook(t *testing.T) {
	t.Parallel()
	mk := testenv.Make(t)
	testBuildHook(t, func(p *project) (testenv.Output, int) {
		p.t.Helper()
		return testenv.Run(p.t, p.dir, []string{"MCPEPOCH=" + p.bin}, mk, "build")
	})
}

// testBuildHook runs build (the project's build command, hook included)
// three times under a connected client: a change, a type error, the fix.
func testBuildHook(t *testing.T, build func(p *project) (testenv.Output, int)) {
	p := newProject(t)
	c := p.host()
	p.record() // the build the host started from
	first := p.onlyHost()

	// A successful build with a change restarts the server.
	p.setRevision("B")
	out, code := build(p)
	t.Logf("build B: exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("build B failed: exit %d", code)
	}
	wantLine(t, out.Stderr, sourceEditChanged(t))
	rs := restarts(out.Stderr)
	if len(rs) != 1 || rs[0].oldEpoch != first.Execution.Epoch || rs[0].oldPID != first.Execution.ProcessID {
		t.Fatalf("restart lines %+v, want one from epoch %s pid %d", rs, first.Execution.Epoch, first.Execution.ProcessID)
	}
	m := p.manifest()
	if digest, _ := sha256File(t, p.path("dist/server.js")); m.Build.Status != "ok" || m.Build.ExitCode != 0 || m.Artifact[0].Digest != digest {
		t.Errorf("manifest after build B: %+v, entry %+v; want status ok, exit_code 0, entry digest %s", m.Build, m.Artifact[0], digest)
	}
	if _, err := c.WaitListChanged(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
		t.Fatalf("lookup after build B = %q, want %q", got, want)
	}
	second := p.onlyHost()

	// A type error fails the build; the hook records the failure with the
	// compiler's exit status and restarts nothing, although tsc still
	// wrote a dist/server.js with the new revision.
	p.setRevision("C")
	p.edit(func(s string) string { return s + typeError })
	out, code = build(p)
	t.Logf("build C (type error): exit %d\n%s", code, out)
	if code == 0 {
		t.Error("a build with a type error succeeded: the hook must not hide the build's status")
	}
	m = p.manifest()
	tscOut, tscCode := p.tsc() // what the compiler itself says of this source
	if tscCode == 0 {
		t.Fatalf("tsc accepts the type error:\n%s", tscOut)
	}
	if m.Build.Status != "failed" || m.Build.ExitCode != tscCode {
		t.Errorf("manifest after the failed build: %+v, want status failed, exit_code %d (tsc's)", m.Build, tscCode)
	}
	wantLine(t, out.Stderr, "build failed (exit "+strconv.Itoa(tscCode)+"): no server restarts for it")
	wantLine(t, out.Stderr, "running server unchanged: pid="+strconv.Itoa(second.Execution.ProcessID)+" epoch="+second.Execution.Epoch)
	if rs := restarts(out.Stderr); len(rs) != 0 {
		t.Errorf("a failed build restarted the server: %+v", rs)
	}
	if js, err := os.ReadFile(p.path("dist/server.js")); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(js), `REVISION = "C"`) {
		t.Log("tsc emitted nothing on the type error: dist/server.js still holds the previous build")
	}
	if now := p.onlyHost(); now.Execution.Epoch != second.Execution.Epoch || now.Execution.ProcessID != second.Execution.ProcessID {
		t.Errorf("after the failed build the host runs epoch %s pid %d, want %s pid %d",
			now.Execution.Epoch, now.Execution.ProcessID, second.Execution.Epoch, second.Execution.ProcessID)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
		t.Errorf("lookup after the failed build = %q, want %q", got, want)
	}
	if ev := c.Events(); ev.ListChanged != 1 {
		t.Errorf("%d list_changed after the failed build, want still 1", ev.ListChanged)
	}

	// The fix builds, and the server restarts onto it.
	p.edit(func(s string) string { return strings.Replace(s, typeError, "", 1) })
	out, code = build(p)
	t.Logf("build C (fixed): exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("fixed build failed: exit %d", code)
	}
	if rs := restarts(out.Stderr); len(rs) != 1 || rs[0].oldEpoch != second.Execution.Epoch {
		t.Errorf("restart lines %+v, want one from epoch %s", rs, second.Execution.Epoch)
	}
	if m := p.manifest(); m.Build.Status != "ok" || m.Build.ExitCode != 0 {
		t.Errorf("manifest after the fixed build: %+v", m.Build)
	}
	if _, err := c.WaitListChanged(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=C"; got != want {
		t.Errorf("lookup after the fixed build = %q, want %q", got, want)
	}
	if ev := c.Events(); len(ev.Errors) != 0 {
		t.Errorf("client reported errors: %q", ev.Errors)
	}
}
