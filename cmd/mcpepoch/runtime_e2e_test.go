package main

// End-to-end test of a host that runs another interpreter than the build
// resolved: the build's shell finds python3 in a virtual environment, the
// client's environment (the host's) finds the one on the test's PATH.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The host runs the python3 of its own PATH and says so: record's answer
// (of a build that restarts nothing, and of one that restarts), status and
// doctor name both interpreters and that they differ, and the audit's
// server_started names the one the build resolved.
func TestPythonRuntimeNotTheBuilds(t *testing.T) {
	t.Parallel()
	pyLookPython(t)
	dir := ideTempDir(t)
	venv := filepath.Join(ideTempDir(t), "venv")
	// --copies: the venv's python3 is a file of its own, not a link that
	// resolves to the interpreter on PATH.
	if out, err := exec.Command("python3", "-m", "venv", "--copies", "--without-pip", venv).CombinedOutput(); err != nil {
		testenv.Missing(t, fmt.Sprintf("python3 -m venv failed (%v): %s\n%s", err, testenv.InstallPython, out))
	}
	ideWrite(t, dir, "server.py", strings.Replace(pyServer, "%s", "lib", 1), 0o644)
	ideWrite(t, dir, "lib.py", "X = 'good'\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"py\"\ncommand = [\"python3\", \"server.py\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)
	built := filepath.Join(venv, "bin", "python3")
	buildEnv := []string{"PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}

	ideMust(t, dir, buildEnv, "record")
	cs, _ := ideHost(t, dir, nil)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	want := "the build "
	_, e := ideMust(t, dir, buildEnv, "record")
	if !strings.Contains(e, "running server unchanged") || !strings.Contains(e, "running ≠ built: the runtime differs: "+want) ||
		!strings.Contains(e, "resolved python3 to "+built+" (") || !strings.Contains(e, "the host resolved it to ") {
		t.Errorf("record with the venv's python3 first on PATH:\n%s\nwant the host's answer to name %s and the host's interpreter", e, built)
	}
	o, _ := ideMust(t, dir, nil, "status")
	if !strings.Contains(o, "running ≠ built: the runtime differs: ") || !strings.Contains(o, built) {
		t.Errorf("status:\n%s\nwant the runtime the build resolved (%s) and that it differs", o, built)
	}
	o, e, _ = ideRun(t, dir, nil, "doctor")
	if d := o + e; !strings.Contains(d, "the runtime differs: ") || !strings.Contains(d, built) || !strings.Contains(d, "give the client the build's PATH") {
		t.Errorf("doctor:\n%s\nwant the runtime the build resolved (%s), that it differs, and the fix", d, built)
	}
	// A build that changes the code restarts the server; the answer names
	// the interpreter of the new epoch too.
	ideWrite(t, dir, "lib.py", "X = 'new'\n", 0o644)
	if _, e := ideMust(t, dir, buildEnv, "record"); !strings.Contains(e, "restarted") || !strings.Contains(e, "running ≠ built: the runtime differs: ") {
		t.Errorf("record of a change with the venv's python3 first on PATH:\n%s\nwant a restart and the runtime that differs", e)
	}
	b, err := os.ReadFile(layout.Audit(dir))
	if err != nil {
		t.Fatal(err)
	}
	var started string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"type":"server_started"`) {
			started = l
		}
	}
	if !strings.Contains(started, `"built_runtime":"`+built+" (") {
		t.Errorf("server_started: %s\nwant built_runtime naming %s", started, built)
	}
}
