// Package npm_test checks the npm packages that scripts/npm-pack.sh builds:
// installed offline from their tarballs into a fresh npm project, the
// launcher must run the binary of this platform and be invisible to an MCP
// client, to signals and to exit statuses.
package npm_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestMain gives the test's own commands a config directory of their own
// (trust store, policy floors), never the user's. The packages' binaries
// are product builds, which do not follow it: exampleProject removes what
// they keep for a project (forgetProject).
func TestMain(m *testing.M) {
	testenv.OwnSession() // the person checks see other packages' hosts
	remove := testenv.UserConfig()
	code := m.Run()
	remove()
	os.Exit(code)
}

// maxTarball is the size limit of one platform package, its one binary.
const maxTarball = 8 << 20

// installed is a fresh npm project with the packages installed.
type installed struct {
	dir      string // the npm project
	launcher string // node_modules/.bin/mcpepoch
	binary   string // the platform package's binary, run directly
	version  string // from VERSION
}

// npmPlatform is this machine's npm os-cpu name, as in the package names.
func npmPlatform(t *testing.T) string {
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if (runtime.GOOS != "linux" && runtime.GOOS != "darwin") || cpu == "" {
		t.Skipf("no npm package is built for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return runtime.GOOS + "-" + cpu
}

// install builds the tarballs with scripts/npm-pack.sh and installs them,
// with no registry, into a new npm project: the main package, and every
// platform package as an optional dependency.
func install(t *testing.T) *installed {
	t.Helper()
	_, npm := testenv.LookNode(t)
	here := npmPlatform(t)
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(b))
	dist := t.TempDir()
	// Four release builds: on a loaded machine they outlast CommandTimeout.
	if out, code := testenv.RunWithin(t, testenv.BuildTimeout, root, nil, "bash", "scripts/npm-pack.sh", dist); code != 0 {
		t.Fatalf("npm-pack.sh: exit %d\n%s", code, out)
	}
	var platforms []string
	for _, p := range []string{"linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"} {
		tgz := filepath.Join(dist, "mcpepoch-"+p+"-"+version+".tgz")
		fi, err := os.Stat(tgz)
		if err != nil {
			t.Fatalf("npm-pack.sh wrote no %s: %v", filepath.Base(tgz), err)
		}
		if fi.Size() > maxTarball {
			t.Errorf("%s: %d bytes, over the limit of %d", filepath.Base(tgz), fi.Size(), maxTarball)
		}
		platforms = append(platforms, tgz)
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name":"app","version":"1.0.0","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	offline := []string{"install", "--offline", "--no-audit", "--no-fund"}
	if out, code := testenv.Run(t, proj, nil, npm, append(append(offline, "--save-optional"), platforms...)...); code != 0 {
		t.Fatalf("npm install of the platform packages: exit %d\n%s", code, out)
	}
	if out, code := testenv.Run(t, proj, nil, npm, append(offline, filepath.Join(dist, "mcpepoch-"+version+".tgz"))...); code != 0 {
		t.Fatalf("npm install of mcpepoch: exit %d\n%s", code, out)
	}
	entries, err := os.ReadDir(filepath.Join(proj, "node_modules", "@mcpepoch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != here {
			t.Errorf("node_modules/@mcpepoch/%s is installed on %s: a package for another platform must install nothing", e.Name(), here)
		}
	}
	return &installed{
		dir:      proj,
		launcher: filepath.Join(proj, "node_modules", ".bin", "mcpepoch"),
		binary:   filepath.Join(proj, "node_modules", "@mcpepoch", here, "bin", "mcpepoch"),
		version:  version,
	}
}

// TestPackages installs the packages once; its checks share the install,
// which none of them changes, and run side by side, each in an example
// project of its own.
func TestPackages(t *testing.T) {
	in := install(t)
	for _, c := range []struct {
		name string
		test func(*testing.T, *installed)
	}{
		{"version", testVersion},
		{"exit status", testExitStatus},
		{"byte for byte", testBytes},
		{"through a restart", testRestart},
		{"signal", testSignal},
		{"credentials module", testCredentialsModule},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, in)
		})
	}
}

// testCredentialsModule: an installed project imports mcpepoch/credentials
// by the package's exports, and outside a host it rejects with
// NotUnderHostError.
func testCredentialsModule(t *testing.T, in *installed) {
	node, _ := testenv.LookNode(t)
	script := `import { getCredential, ENV_SOCKET } from "mcpepoch/credentials";
try { await getCredential("api", {}); console.log("resolved"); }
catch (e) { console.log(e.name + " " + ENV_SOCKET); }`
	out, code := testenv.Run(t, in.dir, nil, node, "--input-type=module", "-e", script)
	if code != 0 || out.Stdout != "NotUnderHostError MCPEPOCH_CREDENTIALS_SOCKET\n" {
		t.Errorf("import of mcpepoch/credentials: exit %d\n%s", code, out)
	}
	for _, f := range []string{"credentials.mjs", "credentials.d.ts"} {
		if _, err := os.Stat(filepath.Join(in.dir, "node_modules", "mcpepoch", f)); err != nil {
			t.Errorf("the package holds no %s: %v", f, err)
		}
	}
}

// testVersion: npx finds the launcher, which prints the stamped version.
func testVersion(t *testing.T, in *installed) {
	out, code := testenv.Run(t, in.dir, nil, "npx", "--offline", "mcpepoch", "version")
	if code != 0 {
		t.Fatalf("npx mcpepoch version: exit %d\n%s", code, out)
	}
	want := regexp.MustCompile(`^mcpepoch ` + regexp.QuoteMeta(in.version) + ` \(.*\)\n$`)
	if !want.MatchString(out.Stdout) {
		t.Errorf("npx mcpepoch version printed %q, want the stamped version %s", out.Stdout, in.version)
	}
}

// testExitStatus: the launcher exits with the binary's status.
func testExitStatus(t *testing.T, in *installed) {
	empty := t.TempDir()
	for _, args := range [][]string{{"no-such-command"}, {"restart"}, {"version"}} {
		bare, bareCode := testenv.Run(t, empty, nil, in.binary, args...)
		via, viaCode := testenv.Run(t, empty, nil, in.launcher, args...)
		if bareCode != viaCode || bare.Stdout != via.Stdout || bare.Stderr != via.Stderr {
			t.Errorf("mcpepoch %v: binary exit %d\n%s\nlauncher exit %d\n%s", args, bareCode, bare, viaCode, via)
		}
	}
}

// exampleProject is a built copy of examples/inventory-node whose tools
// need no grant.
func exampleProject(t *testing.T) string {
	dir := testenv.NodeExample(t)
	f, err := os.OpenFile(filepath.Join(dir, "mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n[grants]\nexempt = [\"inventory_*\"]\n"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forgetProject(dir) })
	return dir
}

// forgetProject removes what a host of the packages kept for the
// temporary project dir in the user's own directories: the packages hold
// product builds, which take those from the account database whatever
// the environment says (internal/userdirs), so TestMain's directories do
// not reach them. They are the project's policy floor and the copy of its
// audit head; the user's trust store is read, never written.
func forgetProject(dir string) {
	cfg, state, err := userdirs.Account()
	if err != nil {
		return
	}
	os.Remove(trust.FloorPath(cfg, trust.FloorRoot(dir)))
	os.RemoveAll(filepath.Join(state, layout.ProjectID(dir)))
}

// exchange is a client's side of a session, one JSON-RPC message a line,
// with a 1 MiB argument among them.
func exchange() []byte {
	big := strings.Repeat("x", 1<<20)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inventory_lookup","arguments":{"sku":"bolt"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inventory_lookup","arguments":{"sku":"` + big + `"}}}`,
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// session runs prog host -- node dist/server.js in dir, writes the
// exchange, and returns what the host wrote on stdout once it has answered
// requests 1 to 4.
func session(t *testing.T, dir, prog string) []byte {
	cmd := exec.Command(prog, "host", "--", "node", "dist/server.js")
	cmd.Dir = dir
	cmd.Env = testenv.Environ()
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s host did not exit after its stdin closed", prog)
		}
	}()
	go stdin.Write(exchange())
	var out bytes.Buffer
	r := bufio.NewReader(stdout)
	ids := map[string]bool{}
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for len(ids) < 4 {
		line, err := r.ReadBytes('\n')
		out.Write(line)
		if err != nil {
			t.Fatalf("%s host: %v after %d answers\nstderr:\n%s", prog, err, len(ids), stderr.String())
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
			ids[string(m.ID)] = true
		}
	}
	return out.Bytes()
}

// testBytes: a client sees the same bytes through the launcher as from
// the binary.
func testBytes(t *testing.T, in *installed) {
	dir := exampleProject(t)
	bare := session(t, dir, in.binary)
	via := session(t, dir, in.launcher)
	if !bytes.Equal(bare, via) {
		t.Errorf("the launcher changed what the client reads:\nbinary   %d bytes: %.400s\nlauncher %d bytes: %.400s", len(bare), bare, len(via), via)
	}
	if !bytes.Contains(bare, []byte("revision=A")) {
		t.Errorf("no tool result in the session:\n%.400s", bare)
	}
}

var revisionRE = regexp.MustCompile(`(?m)^const REVISION = "[^"]*";$`)

// restartSession connects the TypeScript SDK client through prog host,
// rebuilds the server as revision B and records the build, and returns what
// the client saw before and after.
func restartSession(t *testing.T, in *installed, prog string) string {
	dir := exampleProject(t)
	c := testenv.Driver(t, dir, nil, prog, "host", "--", "node", "dist/server.js")
	defer c.Close()
	var seen []string
	look := func() {
		tools, rerr := c.List()
		if rerr != nil {
			t.Fatalf("tools/list through %s: %v", prog, rerr)
		}
		res, rerr := c.Call("inventory_lookup", map[string]any{"sku": "bolt"})
		if rerr != nil {
			t.Fatalf("tools/call through %s: %v", prog, rerr)
		}
		b, _ := json.Marshal(struct {
			Tools  []testenv.Tool
			Result *testenv.Result
		}{tools, res})
		seen = append(seen, string(b))
	}
	look()
	src := filepath.Join(dir, "src", "server.ts")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, revisionRE.ReplaceAll(b, []byte(`const REVISION = "B";`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := testenv.Run(t, dir, nil, "node_modules/.bin/tsc"); code != 0 {
		t.Fatalf("tsc: exit %d\n%s", code, out)
	}
	if out, code := testenv.Run(t, dir, nil, in.binary, "record"); code != 0 {
		t.Fatalf("mcpepoch record: exit %d\n%s", code, out)
	}
	if _, err := c.WaitListChanged(1, 30*time.Second); err != nil {
		t.Fatalf("no list_changed through %s: %v\n%s", prog, err, c.Stderr())
	}
	look()
	return strings.Join(seen, "\n")
}

// testRestart: the TypeScript SDK client is served through a rebuild as it
// is by the binary.
func testRestart(t *testing.T, in *installed) {
	bare := restartSession(t, in, in.binary)
	via := restartSession(t, in, in.launcher)
	if bare != via {
		t.Errorf("through a restart, the client saw\nfrom the binary:\n%s\nthrough the launcher:\n%s", bare, via)
	}
	if !strings.Contains(bare, "revision=A") || !strings.Contains(bare, "revision=B") {
		t.Errorf("the session did not see both revisions:\n%s", bare)
	}
}

// testSignal: SIGTERM sent to the launcher alone reaches the host, which
// stops its server and exits; the launcher ends as the binary does.
func testSignal(t *testing.T, in *installed) {
	bareCode, bareStderr := terminated(t, in.binary)
	viaCode, viaStderr := terminated(t, in.launcher)
	if bareCode != viaCode {
		t.Errorf("after SIGTERM: binary %s, launcher %s\nbinary stderr:\n%s\nlauncher stderr:\n%s", bareCode, viaCode, bareStderr, viaStderr)
	}
}

// terminated starts prog host with its stdin kept open, waits until its
// server answers, sends SIGTERM to prog's process alone, and returns how
// prog ended and its stderr.
func terminated(t *testing.T, prog string) (string, string) {
	dir := exampleProject(t)
	cmd := exec.Command(prog, "host", "--", "node", "dist/server.js")
	cmd.Dir = dir
	cmd.Env = testenv.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.KillGroupOnCleanup(t, cmd.Process.Pid)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	answered := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(stdout).ReadBytes('\n')
		answered <- err
		io.Copy(io.Discard, stdout)
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("%s host: no answer to initialize: %v\n%s", prog, err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s host: no answer to initialize in 60s\n%s", prog, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return describeExit(err), stderr.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("%s host did not exit within 30s of SIGTERM, with its stdin still open\n%s", prog, stderr.String())
	}
	return "", ""
}

// describeExit says how a process ended: "exit N" or "signal S".
func describeExit(err error) string {
	var ee *exec.ExitError
	if err == nil {
		return "exit 0"
	}
	if e, ok := err.(*exec.ExitError); ok {
		ee = e
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit %d", ee.ExitCode())
	}
	return err.Error()
}
