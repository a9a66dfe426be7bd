package main

// End-to-end tests of the identity's depth with real processes: the real
// mcpepoch binary as hook and host, a go-sdk MCP client connected to the
// host, and real servers (a Node script, the Go example built from source).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// ideEnv returns the test's environment without the variables these tests
// set themselves or that would redirect mcpepoch (or what the host adds
// for a Python server), followed by env.
func ideEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MCPEPOCH", "MCPEPOCH_FLAGS", "NODE_OPTIONS", "PYTHONDONTWRITEBYTECODE":
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// ideRun runs the mcpepoch binary in dir with ideEnv(env...) and returns
// stdout, stderr and the exit status.
func ideRun(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Mcpepoch(t), args...)
	cmd.Dir = dir
	cmd.Env = ideEnv(env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mcpepoch %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// ideMust is ideRun for a command that must succeed.
func ideMust(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	o, e, code := ideRun(t, dir, env, args...)
	if code != 0 {
		t.Fatalf("mcpepoch %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, o, e)
	}
	return o, e
}

// ideHost starts `mcpepoch host ARGS…` in dir with ideEnv(env...) and
// connects a go-sdk client to it. The session is closed at cleanup; the
// host's stderr is returned.
func ideHost(t *testing.T, dir string, env []string, args ...string) (*mcp.ClientSession, *testenv.Buffer) {
	t.Helper()
	cmd := exec.Command(testenv.Mcpepoch(t), append([]string{"host"}, args...)...)
	cmd.Dir = dir
	cmd.Env = ideEnv(env...)
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpepoch-identity-test", Version: "0.1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect %v: %v\nstderr:\n%s", cmd.Args, err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		if cmd.ProcessState == nil && cmd.Process != nil {
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("host stderr:\n%s", stderr)
		}
	})
	return cs, stderr
}

// ideTempDir returns a new project directory, symlinks resolved.
func ideTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ideWrite(t *testing.T, dir, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// probeServer is a stdio MCP server in plain Node (no dependency): one tool,
// preloaded, says whether the NODE_OPTIONS preload ran in this process.
const probeServer = `import readline from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.id === null) return;
  const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
  case 'initialize':
    return ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'preload-probe', version: '1.0.0' } });
  case 'tools/list':
    return ok({ tools: [{ name: 'preloaded', description: 'whether the preload ran',
      inputSchema: { type: 'object', properties: {} } }] });
  case 'tools/call':
    return ok({ content: [{ type: 'text', text: 'preloaded=' + (globalThis.preloadProbe === true) }] });
  case 'ping':
    return ok({});
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
rl.on('close', () => process.exit(0));
`

// NODE_OPTIONS set between two launches is a new identity, and its value
// is never written anywhere: not by the hook, not by `mcpepoch identity`,
// and not by a host whose server really ran with it (manifest, caches,
// execution records, audit log, status).
func TestIdentityNodeOptionsNeverStored(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	dir := ideTempDir(t)
	const marker = "preload-e2e-4c7a1d"
	// The preload lies outside the project: a file of the project would be
	// hashed as code under its name, which holds the marker.
	outside := ideTempDir(t)
	value := "--require " + filepath.Join(outside, marker+".cjs")
	ideWrite(t, dir, "server.mjs", probeServer, 0o644)
	ideWrite(t, outside, marker+".cjs", "globalThis.preloadProbe = true;\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"probe\"\ncommand = [\"node\", \"server.mjs\"]\n\n[grants]\nexempt = [\"preloaded\"]\n", 0o644)
	with := []string{"NODE_OPTIONS=" + value}

	_, e := ideMust(t, dir, nil, "record")
	if strings.Contains(e, "NODE_OPTIONS") {
		t.Errorf("first record names NODE_OPTIONS though it is unset:\n%s", e)
	}
	// The hook's environment is not the server's: it records the digest
	// but never names the variable as changed (hosts report the server's
	// environment). What the preload makes code is another matter: every
	// file of the project (a require hook may load any extension), so
	// the project tree is a new input.
	_, e = ideMust(t, dir, with, "record")
	if !strings.Contains(e, "build complete: . changed\n") || strings.Contains(e, "NODE_OPTIONS") {
		t.Errorf("record with NODE_OPTIONS set:\n%s\nwant build complete: . changed, and NODE_OPTIONS not named", e)
	}
	o, _ := ideMust(t, dir, with, "identity", "--json")
	if !strings.Contains(o, `"path": "NODE_OPTIONS"`) {
		t.Errorf("identity --json does not list NODE_OPTIONS:\n%s", o)
	}
	outputs := map[string]string{"identity --json": o}
	outputs["identity"], _ = ideMust(t, dir, with, "identity")
	outputs["record --json"], _ = ideMust(t, dir, with, "record", "--json")

	// A real host whose server runs with the variable.
	cs, hostErr := ideHost(t, dir, with)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "preloaded", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call preloaded: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "preloaded=true" {
		t.Fatalf("tools/call preloaded: %+v: the server did not run with NODE_OPTIONS", res.Content)
	}
	outputs["status --json"], _ = ideMust(t, dir, nil, "status", "--json")
	outputs["status"], _ = ideMust(t, dir, nil, "status")
	if !strings.Contains(outputs["status --json"], `"processId"`) {
		t.Fatalf("status --json shows no running server:\n%s", outputs["status --json"])
	}
	// While the host lives: its execution record too.
	t.Logf("while the host runs, looked into %q", ideGrepTree(t, dir, marker))
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	outputs["host stderr"] = hostErr.String()

	for name, out := range outputs {
		if strings.Contains(out, marker) {
			t.Errorf("%s shows the value of NODE_OPTIONS:\n%s", name, out)
		}
	}
	audit := filepath.Join(dir, ".mcpepoch", "audit.jsonl")
	if fi, err := os.Stat(audit); err != nil || fi.Size() == 0 {
		t.Fatalf("the host wrote no audit log to look into: %v", err)
	}
	// After the host: the audit log and what stays.
	t.Logf("after the host, looked into %q", ideGrepTree(t, dir, marker))
}

// ideGrepTree fails the test for every regular file under dir/.mcpepoch
// that holds s, and returns the files it read, relative to dir.
func ideGrepTree(t *testing.T, dir, s string) []string {
	t.Helper()
	var looked []string
	err := filepath.WalkDir(filepath.Join(dir, ".mcpepoch"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		looked = append(looked, strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds the value of NODE_OPTIONS:\n%s", p, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return looked
}

// ideStatus is what these tests read of `mcpepoch status --json`.
type ideStatus struct {
	Execution *struct {
		ProcessID   int    `json:"processId"`
		EntryDigest string `json:"entryDigest"`
		Epoch       string `json:"epoch"`
	} `json:"execution"`
	Running *struct {
		Exe        string `json:"exe"`
		ExeDeleted bool   `json:"exeDeleted"`
		ExeDigest  string `json:"exeDigest"`
	} `json:"running"`
	Drift []string `json:"drift"`
}

// ideOnlyStatus returns the status of the project's one host.
func ideOnlyStatus(t *testing.T, dir string) (ideStatus, string) {
	t.Helper()
	o, _ := ideMust(t, dir, nil, "status", "--json")
	var all []ideStatus
	if err := json.Unmarshal([]byte(o), &all); err != nil {
		t.Fatalf("status --json: %v\n%s", err, o)
	}
	if len(all) != 1 || all[0].Execution == nil {
		t.Fatalf("status --json: want one host running a server:\n%s", o)
	}
	return all[0], o
}

// ideWaitStatus polls status until ok holds, for up to 20 s.
func ideWaitStatus(t *testing.T, dir, what string, ok func(ideStatus) bool) ideStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, raw := ideOnlyStatus(t, dir)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed %s:\n%s", what, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ideGoBuild puts at out (a new file, mode 0755) examples/inventory-go
// built with extra go build arguments: a copy of the binary the test
// processes share for those arguments (testenv.BuildFlags), linked once.
func ideGoBuild(t *testing.T, out string, args ...string) {
	t.Helper()
	b, err := os.ReadFile(testenv.BuildFlags(t, "./examples/inventory-go", args...))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func ideSHA256(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// A Go server binary replaced on disk (by rename, as go build and install
// do) while it runs: the host sees through /proc/<pid>/exe that what runs is
// no longer what was built, and mcpepoch status says so until the next
// build restarts the server.
func TestDriftBinaryReplacedWhileRunning(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skipf("running ≠ built is read from /proc/<pid>/exe, which %s does not have; status says \"not observed\" there", runtime.GOOS)
	}
	dir := ideTempDir(t)
	srv := filepath.Join(dir, "bin", "srv")
	ideGoBuild(t, srv)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"drift\"\ncommand = [\"./bin/srv\"]\n", 0o644)
	ideMust(t, dir, nil, "record")

	cs, _ := ideHost(t, dir, []string{"INVENTORY_DATA_DIR=" + filepath.Join(dir, "data")}, "--", "./bin/srv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil { // the server has answered
		t.Fatalf("tools/list: %v", err)
	}
	built := ideSHA256(t, srv)
	s := ideWaitStatus(t, dir, "the running server observed", func(s ideStatus) bool {
		return s.Running != nil && s.Running.ExeDigest != ""
	})
	pid := s.Execution.ProcessID
	if s.Running.Exe != srv || s.Running.ExeDigest != built || s.Running.ExeDeleted {
		t.Errorf("running %+v, want %s %s", *s.Running, srv, built)
	}
	if len(s.Drift) != 0 {
		t.Errorf("drift %q before anything changed", s.Drift)
	}
	if o, _ := ideMust(t, dir, nil, "status"); strings.Contains(o, "running ≠ built") {
		t.Errorf("status before anything changed:\n%s", o)
	}

	// Rebuild next to it and rename over it; nothing is recorded yet.
	ideGoBuild(t, srv+".new", "-ldflags=-X main.revision=B")
	if err := os.Rename(srv+".new", srv); err != nil {
		t.Fatal(err)
	}
	s = ideWaitStatus(t, dir, "drift", func(s ideStatus) bool { return len(s.Drift) >= 2 })
	want := "running ≠ built: the executable of pid " + strconv.Itoa(pid) + " was deleted or replaced on disk since it started (" + srv + " (deleted))"
	// Two views of one change: /proc says the running image is gone, and the
	// host's own identity of what is on disk no longer matches the epoch's.
	onDisk := "running ≠ built: bin/srv changed on disk since epoch "
	if s.Execution.ProcessID != pid || len(s.Drift) != 2 || s.Drift[0] != want ||
		!strings.HasPrefix(s.Drift[1], onDisk) || !strings.Contains(s.Drift[1], "no build restarted it") {
		t.Errorf("pid %d drift %q, want pid %d and [%q, %q…]", s.Execution.ProcessID, s.Drift, pid, want, onDisk)
	}
	if o, _ := ideMust(t, dir, nil, "status"); !strings.Contains(o, "  "+want+"\n") {
		t.Errorf("status does not say running ≠ built:\n%s", o)
	}
	// The old image still answers.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the binary was replaced: %v", err)
	}

	// The hook records the new binary; the host restarts onto it and what
	// runs is what was built again.
	_, e := ideMust(t, dir, nil, "record")
	if !strings.Contains(e, "build complete: bin/srv changed\n") || !strings.Contains(e, "server restarted") {
		t.Fatalf("record after the rebuild:\n%s", e)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the restart: %v", err)
	}
	rebuilt := ideSHA256(t, srv)
	s = ideWaitStatus(t, dir, "the new server observed", func(s ideStatus) bool {
		return s.Execution.ProcessID != pid && s.Running != nil && s.Running.ExeDigest == rebuilt
	})
	if len(s.Drift) != 0 || s.Execution.EntryDigest != rebuilt {
		t.Errorf("after the restart: entry %s drift %q, want entry %s and no drift", s.Execution.EntryDigest, s.Drift, rebuilt)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the replaced server, pid %d, still runs (kill 0: %v)", pid, err)
	}
}
