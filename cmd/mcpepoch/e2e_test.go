package main

// End-to-end tests: the real mcpepoch binary, the real Node example built
// with the real TypeScript compiler, and a real MCP client (the TypeScript
// SDK, through testenv.Driver) talking to `mcpepoch host`.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// project is a built copy of examples/inventory-node and the mcpepoch
// binary that records its builds.
type project struct {
	t   *testing.T
	dir string
	bin string
}

// newProject returns a built copy of the example. Its tools are exempted
// from grants (a [grants] section added to mcpepoch.toml): approvals are not
// what these tests are about, and every call must reach the server.
func newProject(t *testing.T) *project {
	t.Helper()
	return newProjectAt(t, testenv.NodeExample(t))
}

// newProjectAt is newProject for a copy of the example already made in dir.
func newProjectAt(t *testing.T, dir string) *project {
	t.Helper()
	p := &project{t: t, dir: dir, bin: testenv.Mcpepoch(t)}
	f, err := os.OpenFile(p.path("mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n[grants]\nexempt = [\"inventory_*\"]\n"); err != nil {
		t.Fatal(err)
	}
	return p
}

// mcpepoch runs the binary in the project and returns its output and exit
// status.
func (p *project) mcpepoch(args ...string) (testenv.Output, int) {
	p.t.Helper()
	return testenv.Run(p.t, p.dir, nil, p.bin, args...)
}

// record runs mcpepoch record, which must succeed, and returns its stderr.
func (p *project) record(args ...string) string {
	p.t.Helper()
	out, code := p.mcpepoch(append([]string{"record"}, args...)...)
	if code != 0 {
		p.t.Fatalf("mcpepoch record %v: exit %d\n%s", args, code, out)
	}
	p.t.Logf("mcpepoch record:\n%s", out)
	return out.Stderr
}

// host connects a new MCP client to the example server through
// `mcpepoch host`.
func (p *project) host() *testenv.Client {
	p.t.Helper()
	return testenv.Driver(p.t, p.dir, nil, p.bin, "host", "--", "node", "dist/server.js")
}

// hostStatus is one element of `mcpepoch status --json`.
type hostStatus struct {
	AgentRun  string `json:"agentRun"`
	Label     string `json:"label"`
	State     string `json:"state"`
	Execution *struct {
		Epoch       string `json:"epoch"`
		ProcessID   int    `json:"processId"`
		EntryDigest string `json:"entryDigest"`
	} `json:"execution"`
	Tools []string `json:"tools"`
	Drift []string `json:"drift"`
}

// status returns what `mcpepoch status --json` reports, sorted by run.
func (p *project) status() []hostStatus {
	p.t.Helper()
	out, code := p.mcpepoch("status", "--json")
	if code != 0 {
		p.t.Fatalf("mcpepoch status --json: exit %d\n%s", code, out)
	}
	var all []hostStatus
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil {
		p.t.Fatalf("mcpepoch status --json: %v\n%s", err, out)
	}
	for _, s := range all {
		if s.Execution == nil {
			p.t.Fatalf("mcpepoch status --json: host %s runs nothing (state %s)\n%s", s.AgentRun, s.State, out)
		}
	}
	slices.SortFunc(all, func(a, b hostStatus) int { return strings.Compare(a.AgentRun, b.AgentRun) })
	return all
}

// onlyHost returns the status of the project's one host.
func (p *project) onlyHost() hostStatus {
	p.t.Helper()
	all := p.status()
	if len(all) != 1 {
		p.t.Fatalf("mcpepoch status --json: %d hosts, want 1: %+v", len(all), all)
	}
	return all[0]
}

// path returns the absolute path of project file rel.
func (p *project) path(rel string) string { return filepath.Join(p.dir, filepath.FromSlash(rel)) }

// edit rewrites src/server.ts with fn, which must change it.
func (p *project) edit(fn func(string) string) {
	p.t.Helper()
	name := p.path("src/server.ts")
	b, err := os.ReadFile(name)
	if err != nil {
		p.t.Fatal(err)
	}
	out := fn(string(b))
	if out == string(b) {
		p.t.Fatal("edit of src/server.ts changed nothing")
	}
	if err := os.WriteFile(name, []byte(out), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

var revisionRE = regexp.MustCompile(`(?m)^const REVISION = "[^"]*";$`)

// setRevision sets REVISION in src/server.ts.
func (p *project) setRevision(rev string) {
	p.t.Helper()
	p.edit(func(s string) string {
		if !revisionRE.MatchString(s) {
			p.t.Fatal(`src/server.ts has no line const REVISION = "…";`)
		}
		return revisionRE.ReplaceAllString(s, `const REVISION = "`+rev+`";`)
	})
}

// pingTool registers inventory_ping, a tool the example does not have,
// following the pattern of the example's registerTool calls.
const pingTool = `server.registerTool(
  "inventory_ping",
  {
    title: "Ping",
    description: "Answer pong and the code revision.",
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async () => ({ content: [{ type: "text", text: ` + "`pong revision=${REVISION}`" + ` }] }),
);

`

const transportLine = "const transport = new StdioServerTransport();"

// addPingTool adds inventory_ping to src/server.ts.
func (p *project) addPingTool() {
	p.t.Helper()
	p.edit(func(s string) string { return strings.Replace(s, transportLine, pingTool+transportLine, 1) })
}

// typeError is a line that compiles to JavaScript but fails type checking.
const typeError = "\nconst notANumber: number = \"forty-two\";\nconsole.error(notANumber);\n"

// tsc compiles the project and returns tsc's exit status and output.
func (p *project) tsc() (testenv.Output, int) {
	p.t.Helper()
	return testenv.Run(p.t, p.dir, nil, "node_modules/.bin/tsc")
}

// build compiles the project, which must succeed.
func (p *project) build() {
	p.t.Helper()
	if out, code := p.tsc(); code != 0 {
		p.t.Fatalf("tsc: exit %d\n%s", code, out)
	}
}

// call calls tool name and returns its text, failing on any error.
func call(t *testing.T, c *testenv.Client, name string, args any) string {
	t.Helper()
	res, rerr := c.Call(name, args)
	if rerr != nil {
		t.Fatalf("call %s: %v", name, rerr)
	}
	if res.IsError {
		t.Fatalf("call %s: tool error: %s", name, res.Text())
	}
	return res.Text()
}

// toolNames lists the client's tools, failing on any error.
func toolNames(t *testing.T, c *testenv.Client) []string {
	t.Helper()
	tools, rerr := c.List()
	if rerr != nil {
		t.Fatalf("tools/list: %v", rerr)
	}
	return testenv.ToolNames(tools)
}

// restartLine is a "server restarted: epoch A → B, pid X → Y" status line.
type restartLine struct {
	run             string // set when the line is prefixed "[host RUN] "
	oldEpoch, epoch string
	oldPID, newPID  int
}

var restartRE = regexp.MustCompile(`(?m)^(?:\[host (\S+)\] )?server restarted: epoch (\S+) → (\S+), pid (\d+) → (\d+)(?:; .*)?$`)

func restarts(stderr string) []restartLine {
	var out []restartLine
	for _, m := range restartRE.FindAllStringSubmatch(stderr, -1) {
		o, _ := strconv.Atoi(m[4])
		n, _ := strconv.Atoi(m[5])
		out = append(out, restartLine{run: m[1], oldEpoch: m[2], epoch: m[3], oldPID: o, newPID: n})
	}
	return out
}

// unchangedLine is a "running server unchanged: pid=P epoch=E" status line.
type unchangedLine struct {
	run   string
	pid   int
	epoch string
}

var unchangedRE = regexp.MustCompile(`(?m)^(?:\[host (\S+)\] )?running server unchanged: pid=(\d+) epoch=(\S+)$`)

func unchangedLines(stderr string) []unchangedLine {
	var out []unchangedLine
	for _, m := range unchangedRE.FindAllStringSubmatch(stderr, -1) {
		pid, _ := strconv.Atoi(m[2])
		out = append(out, unchangedLine{run: m[1], pid: pid, epoch: m[3]})
	}
	return out
}

// ansiEscape matches terminal colour sequences, which go-task writes around
// its own lines when it thinks it may (with CI set, for one).
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// hasLine reports whether text has line as one whole line, colour
// sequences aside.
func hasLine(text, line string) bool {
	return slices.Contains(strings.Split(ansiEscape.ReplaceAllString(text, ""), "\n"), line)
}

// nodeLoadsTS reports whether the node on PATH loads TypeScript modules
// by itself (type stripping, process.features.typescript): then a saved
// .ts source of the example is code of its running epoch, in the project
// tree, and a record after it names "." too.
func nodeLoadsTS(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("node", "-p", "Boolean(process.features.typescript)").Output()
	if err != nil {
		t.Fatalf("node -p process.features.typescript: %v", err)
	}
	return strings.TrimSpace(string(out)) == "true"
}

// sourceEditChanged is the record line after an edit of the example's
// TypeScript source and its build: the entry, and the project tree when
// node loads TypeScript itself (nodeLoadsTS).
func sourceEditChanged(t *testing.T) string {
	t.Helper()
	if nodeLoadsTS(t) {
		return "build complete: dist/server.js, . changed"
	}
	return "build complete: dist/server.js changed"
}

// wantLine fails the test unless text has line as one whole line.
func wantLine(t *testing.T, text, line string) {
	t.Helper()
	if !hasLine(text, line) {
		t.Errorf("no line %q in:\n%s", line, text)
	}
}

// manifestFile is the run manifest as documented in package manifest,
// decoded here independently of it.
type manifestFile struct {
	Schema   int      `toml:"schema"`
	Label    string   `toml:"label"`
	Command  []string `toml:"command"`
	Dir      string   `toml:"dir"`
	Inferred []string `toml:"inferred"`
	Build    struct {
		ID        string    `toml:"id"`
		Completed time.Time `toml:"completed"`
		Status    string    `toml:"status"`
		ExitCode  int       `toml:"exit_code"`
	} `toml:"build"`
	Artifact []struct {
		Role    string `toml:"role"`
		Path    string `toml:"path"`
		Digest  string `toml:"digest"`
		Size    int64  `toml:"size"`
		Version string `toml:"version"`
		Missing bool   `toml:"missing"`
		Changed bool   `toml:"changed"`
	} `toml:"artifact"`
}

// manifest reads .mcpepoch/manifest.toml.
func (p *project) manifest() manifestFile {
	p.t.Helper()
	var m manifestFile
	md, err := toml.DecodeFile(p.path(".mcpepoch/manifest.toml"), &m)
	if err != nil {
		p.t.Fatal(err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		slices.Sort(keys)
		p.t.Logf("manifest keys not checked here: %v", slices.Compact(keys))
	}
	return m
}

// sha256File returns "sha256:<hex>" of the file and its size.
func sha256File(t *testing.T, name string) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), int64(len(b))
}

// gone reports whether process pid no longer exists (it was reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestRecordNodeExample records builds of the Node example and checks the
// manifest against digests computed here from the same files.
func TestRecordNodeExample(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	stderr := p.record()
	wantLine(t, stderr, "no host reachable over the socket; hosts watching the manifest will see this build")

	node, _ := testenv.LookNode(t)
	node, err := filepath.EvalSymlinks(node)
	if err != nil {
		t.Fatal(err)
	}
	nodeVersion, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The files hashed here; the manifest may describe more inputs (roles
	// other than these three), whose changed flags are checked too.
	type want struct{ role, path, file, version string }
	wants := []want{
		{"entry", "dist/server.js", p.path("dist/server.js"), ""},
		{"lockfile", "package-lock.json", p.path("package-lock.json"), ""},
		{"runtime", node, node, strings.TrimSpace(string(nodeVersion))},
	}
	check := func(m manifestFile, changed func(path string) bool) {
		t.Helper()
		if m.Schema != 1 || m.Label != "inventory-local" || m.Dir != p.dir || !slices.Equal(m.Command, []string{"node", "dist/server.js"}) {
			t.Errorf("manifest head = schema %d label %q dir %q command %q; want 1, inventory-local, %s, [node dist/server.js]", m.Schema, m.Label, m.Dir, m.Command, p.dir)
		}
		if m.Build.Status != "ok" || m.Build.ExitCode != 0 || len(m.Build.ID) != 26 {
			t.Errorf("manifest build = %+v, want status ok, exit_code 0, a ULID id", m.Build)
		}
		if d := time.Since(m.Build.Completed); d < -time.Minute || d > 5*time.Minute {
			t.Errorf("build completed %s, not now", m.Build.Completed)
		}
		if len(m.Artifact) == 0 || m.Artifact[0].Role != "entry" {
			t.Fatalf("manifest artifacts %+v: want the entry first", m.Artifact)
		}
		for _, w := range wants {
			n := 0
			for _, a := range m.Artifact {
				if a.Role != w.role {
					continue
				}
				n++
				digest, size := sha256File(t, w.file)
				if a.Path != w.path || a.Digest != digest || a.Size != size || a.Version != w.version || a.Missing {
					t.Errorf("%s artifact = %+v\nwant path %s digest %s size %d version %q", w.role, a, w.path, digest, size, w.version)
				}
			}
			if n != 1 {
				t.Errorf("manifest has %d %s artifacts, want 1: %+v", n, w.role, m.Artifact)
			}
		}
		for _, a := range m.Artifact {
			if a.Changed != changed(a.Path) {
				t.Errorf("%s artifact %s: changed = %v, want %v", a.Role, a.Path, a.Changed, changed(a.Path))
			}
		}
	}
	first := p.manifest()
	check(first, func(string) bool { return true })
	// The first record says so rather than name every input as changed.
	wantLine(t, stderr, "build complete: first build recorded")

	stderr = p.record()
	wantLine(t, stderr, "build complete: nothing changed")
	second := p.manifest()
	check(second, func(string) bool { return false })
	if second.Build.ID == first.Build.ID {
		t.Errorf("two hook runs share build id %s", first.Build.ID)
	}

	// The source edited and the entry built from it: the entry, and the
	// project tree when node loads the .ts source itself.
	p.setRevision("B")
	p.build()
	stderr = p.record()
	wantLine(t, stderr, sourceEditChanged(t))
	ts := nodeLoadsTS(t)
	check(p.manifest(), func(path string) bool { return path == "dist/server.js" || ts && path == "." })
}

// TestHostRestartSeenByClient changes the server's code under a connected
// client: the client is told the catalog changed, sees the new tool, and is
// answered by the new code, under a new epoch and process.
func TestHostRestartSeenByClient(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.host()
	if got, want := toolNames(t, c), []string{"inventory_lookup", "inventory_adjust", "inventory_order"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=A"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
	before := p.onlyHost()
	if digest, _ := sha256File(t, p.path("dist/server.js")); before.Execution.EntryDigest != digest {
		t.Errorf("status entry digest %s, file has %s", before.Execution.EntryDigest, digest)
	}
	p.record() // the build the host started from

	p.setRevision("B")
	p.addPingTool()
	p.build()
	stderr := p.record()
	wantLine(t, stderr, sourceEditChanged(t))
	rs := restarts(stderr)
	if len(rs) != 1 {
		t.Fatalf("%d restart lines, want 1:\n%s", len(rs), stderr)
	}
	r := rs[0]
	if r.run != "" {
		t.Errorf("restart line names host %s with only one host listening", r.run)
	}
	if r.oldEpoch != before.Execution.Epoch || r.oldPID != before.Execution.ProcessID {
		t.Errorf("restart line says epoch %s pid %d before, status said %s pid %d", r.oldEpoch, r.oldPID, before.Execution.Epoch, before.Execution.ProcessID)
	}
	if r.epoch == r.oldEpoch || r.newPID == r.oldPID {
		t.Errorf("restart kept epoch or pid: %+v", r)
	}

	if n, err := c.WaitListChanged(1, 10*time.Second); err != nil {
		t.Fatalf("no notifications/tools/list_changed after the restart: %v (%d)", err, n)
	}
	if got, want := toolNames(t, c), []string{"inventory_lookup", "inventory_adjust", "inventory_order", "inventory_ping"}; !slices.Equal(got, want) {
		t.Errorf("tools after restart = %v, want %v", got, want)
	}
	if got, want := call(t, c, "inventory_ping", nil), "pong revision=B"; got != want {
		t.Errorf("ping = %q, want %q", got, want)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
		t.Errorf("lookup after restart = %q, want %q", got, want)
	}

	after := p.onlyHost()
	if after.AgentRun != before.AgentRun {
		t.Errorf("agent run changed from %s to %s: the client's connection is the same", before.AgentRun, after.AgentRun)
	}
	if after.Execution.Epoch != r.epoch || after.Execution.ProcessID != r.newPID {
		t.Errorf("status says epoch %s pid %d, restart line said %s pid %d", after.Execution.Epoch, after.Execution.ProcessID, r.epoch, r.newPID)
	}
	if digest, _ := sha256File(t, p.path("dist/server.js")); after.Execution.EntryDigest != digest || after.Execution.EntryDigest == before.Execution.EntryDigest {
		t.Errorf("status entry digest %s, file has %s (before: %s)", after.Execution.EntryDigest, digest, before.Execution.EntryDigest)
	}
	if !slices.Contains(after.Tools, "inventory_ping") {
		t.Errorf("host catalog %v lacks inventory_ping", after.Tools)
	}
	if !gone(before.Execution.ProcessID) {
		t.Errorf("old server pid %d still exists", before.Execution.ProcessID)
	}
	ev := c.Events()
	if len(ev.Errors) != 0 {
		t.Errorf("client reported errors: %q", ev.Errors)
	}
	if ev.ListChanged != 1 {
		t.Errorf("client got %d list_changed notifications, want 1", ev.ListChanged)
	}
}

// TestIdenticalRebuildKeepsEpoch rebuilds without a source change: the bytes
// are the same, so the host keeps its process and epoch.
func TestIdenticalRebuildKeepsEpoch(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.host()
	before := p.onlyHost()
	stderr := p.record() // the first manifest: everything is new to it, not to the host
	if u := unchangedLines(stderr); len(u) != 1 || u[0].pid != before.Execution.ProcessID || u[0].epoch != before.Execution.Epoch {
		t.Errorf("first record: unchanged lines %+v, want pid=%d epoch=%s\n%s", u, before.Execution.ProcessID, before.Execution.Epoch, stderr)
	}

	entry := p.path("dist/server.js")
	old, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(entry, past, past); err != nil {
		t.Fatal(err)
	}
	p.build()
	if fi, err := os.Stat(entry); err != nil || !fi.ModTime().After(past.Add(time.Minute)) {
		t.Fatalf("tsc did not rewrite %s (%v)", entry, err)
	}
	if now, _ := os.ReadFile(entry); string(now) != string(old) {
		t.Fatal("an identical rebuild changed dist/server.js")
	}

	stderr = p.record()
	wantLine(t, stderr, "build complete: nothing changed")
	wantLine(t, stderr, "running server unchanged: pid="+strconv.Itoa(before.Execution.ProcessID)+" epoch="+before.Execution.Epoch)
	if rs := restarts(stderr); len(rs) != 0 {
		t.Errorf("restarted: %+v", rs)
	}
	after := p.onlyHost()
	if after.Execution.Epoch != before.Execution.Epoch || after.Execution.ProcessID != before.Execution.ProcessID {
		t.Errorf("status: epoch %s pid %d, want %s pid %d", after.Execution.Epoch, after.Execution.ProcessID, before.Execution.Epoch, before.Execution.ProcessID)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "nut"}), "sku=nut quantity=0 revision=A"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
	if ev := c.Events(); ev.ListChanged != 0 || len(ev.Errors) != 0 {
		t.Errorf("events = %+v, want no list_changed and no errors", ev)
	}
}

// TestLongProjectPath puts the project under a path too long for a unix
// socket inside it (sun_path holds ~104 bytes): hook and host still meet.
func TestLongProjectPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for len(dir) <= 150 {
		dir = filepath.Join(dir, "a-rather-long-directory-name-for-a-project")
	}
	p := newProjectAt(t, testenv.NodeExampleAt(t, dir))
	if len(p.dir) <= 150 {
		t.Fatalf("project dir %s is only %d bytes", p.dir, len(p.dir))
	}
	c := p.host()
	before := p.onlyHost()
	p.setRevision("B")
	p.build()
	stderr := p.record()
	rs := restarts(stderr)
	if len(rs) != 1 || rs[0].oldEpoch != before.Execution.Epoch {
		t.Fatalf("restart lines %+v, want one from epoch %s:\n%s", rs, before.Execution.Epoch, stderr)
	}
	if _, err := c.WaitListChanged(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
	socks, _ := filepath.Glob(p.path(".mcpepoch/sock/*.sock"))
	for _, s := range socks {
		if len(s) > 103 {
			t.Errorf("socket %s is %d bytes long, over what sun_path holds", s, len(s))
		}
	}
}

// TestTwoHostsOneHook connects two clients, each through its own host, to
// one project: one hook run restarts both and prints one line for each.
func TestTwoHostsOneHook(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c1 := p.host()
	c2 := p.host()
	before := p.status()
	if len(before) != 2 {
		t.Fatalf("%d hosts, want 2: %+v", len(before), before)
	}
	p.setRevision("B")
	p.build()
	stderr := p.record()
	rs := restarts(stderr)
	if len(rs) != 2 {
		t.Fatalf("%d restart lines, want 2:\n%s", len(rs), stderr)
	}
	slices.SortFunc(rs, func(a, b restartLine) int { return strings.Compare(a.run, b.run) })
	after := p.status()
	if len(after) != 2 {
		t.Fatalf("%d hosts after the restart, want 2: %+v", len(after), after)
	}
	for i, r := range rs {
		b, a := before[i], after[i]
		if r.run != b.AgentRun || a.AgentRun != b.AgentRun {
			t.Errorf("line %d names host %q; hosts are %s, %s", i, r.run, before[0].AgentRun, before[1].AgentRun)
			continue
		}
		if r.oldEpoch != b.Execution.Epoch || r.oldPID != b.Execution.ProcessID || r.epoch != a.Execution.Epoch || r.newPID != a.Execution.ProcessID {
			t.Errorf("host %s: line says %s/%d → %s/%d, status %s/%d → %s/%d", r.run, r.oldEpoch, r.oldPID, r.epoch, r.newPID,
				b.Execution.Epoch, b.Execution.ProcessID, a.Execution.Epoch, a.Execution.ProcessID)
		}
	}
	if after[0].Execution.Epoch == after[1].Execution.Epoch {
		t.Errorf("both hosts run epoch %s", after[0].Execution.Epoch)
	}
	for i, c := range []*testenv.Client{c1, c2} {
		if _, err := c.WaitListChanged(1, 10*time.Second); err != nil {
			t.Errorf("client %d: %v", i+1, err)
		}
		if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
			t.Errorf("client %d: lookup = %q, want %q", i+1, got, want)
		}
		if ev := c.Events(); ev.ListChanged != 1 || len(ev.Errors) != 0 {
			t.Errorf("client %d: events %+v, want one list_changed and no errors", i+1, ev)
		}
	}
}
