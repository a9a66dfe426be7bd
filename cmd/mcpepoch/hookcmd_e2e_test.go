package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// hookProject writes a Makefile project whose build copies a shell server
// into place, with mcpepoch.toml naming it.
func hookProject(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "server.src"), "#!/bin/sh\nexec cat\n")
	writeFile(t, filepath.Join(dir, "Makefile"), ".PHONY: build\nbuild:\n\tcp server.src server.sh\n")
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"shell\"\ncommand = [\"/bin/sh\", \"server.sh\"]\n")
	return dir
}

// A user who installed mcpepoch with `go install` has it on the PATH of
// their shell only. init, run from that shell, writes mcpepoch's absolute
// path into the Makefile, so a build started under a PATH without it (a
// desktop client, an editor) still runs the hook.
func TestInitHookRunsWithoutMcpepochOnPath(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	mk := testenv.Make(t)
	dir := hookProject(t)
	shell := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
	if out, code := testenv.Run(t, dir, shell, bin, "init", "--yes"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	desktop := []string{"PATH=/usr/bin:/bin", "NO_COLOR=1"}
	out, code := testenv.Run(t, dir, desktop, mk, "build")
	if code != 0 || !strings.Contains(out.Combined, "build complete") {
		t.Fatalf("make build under a PATH without mcpepoch: exit %d, no build recorded\n%s", code, out)
	}
	out, _ = testenv.Run(t, dir, desktop, bin, "doctor")
	if strings.Contains(out.Combined, "the hook runs") {
		t.Errorf("doctor after init names the hook's command:\n%s", out)
	}
}

// doctor names a hook command that is not found, or is another mcpepoch,
// with the line that points the hook at this one.
func TestDoctorChecksHookCommand(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir := hookProject(t)
	env := []string{"PATH=/usr/bin:/bin", "NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
	if out, code := testenv.Run(t, dir, env, bin, "init", "--yes"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	makefile, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	set := "MCPEPOCH ?= " + bin
	if !strings.Contains(string(makefile), set+"\ninclude mcpepoch.mk\n") {
		t.Fatalf("init wrote no %q before the include:\n%s", set, makefile)
	}
	other := filepath.Join(dir, "old", "mcpepoch")
	writeFile(t, other, "#!/bin/sh\necho 'mcpepoch 0.0.1 (go1.20 linux/amd64)'\n")
	if err := os.Chmod(other, 0o755); err != nil {
		t.Fatal(err)
	}
	fix := "fix: write " + set + " before include mcpepoch.mk in Makefile"
	for _, c := range []struct{ hook, want string }{
		{"mcpepoch", `the hook runs "mcpepoch", which is not on PATH: every build skips the hook`},
		{"old/mcpepoch", `the hook runs old/mcpepoch, which is "mcpepoch 0.0.1 (go1.20 linux/amd64)", not this`},
		{"old/missing", `the hook runs old/missing, which is not an executable file`},
	} {
		edited := strings.Replace(string(makefile), set, "MCPEPOCH ?= "+c.hook, 1)
		writeFile(t, filepath.Join(dir, "Makefile"), edited)
		where := fmt.Sprintf("Makefile:%d: ", strings.Count(edited[:strings.Index(edited, "MCPEPOCH ?=")], "\n")+1)
		out, code := testenv.Run(t, dir, env, bin, "doctor")
		if code != 1 || !strings.Contains(out.Stdout, where+c.want) || !strings.Contains(out.Stdout, fix) {
			t.Errorf("MCPEPOCH ?= %s: doctor exit %d, want 1 and %q with %q:\n%s", c.hook, code, c.want, fix, out)
		}
	}
}
