package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// serverTS is a TypeScript MCP server with one tool per name in TOOLS,
// each answering with REVISION.
const serverTS = `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const REVISION = "A";
const TOOLS: string[] = ["weather_now"];

const server = new McpServer({ name: "weather", version: "1.0.0" });
for (const name of TOOLS) {
  server.registerTool(name, { description: "weather " + name }, async () => ({
    content: [{ type: "text", text: "revision=" + REVISION }],
  }));
}
await server.connect(new StdioServerTransport());
`

const freshTSConfig = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "rootDir": "src",
    "outDir": "dist",
    "strict": true,
    "skipLibCheck": true
  },
  "include": ["src/**/*.ts"]
}
`

// From a fresh TypeScript project (npm init, the MCP SDK, tsc): init
// --yes wires it, a second init changes nothing, dev builds and records,
// doctor is clean, a real client connects through the config init wrote,
// and a save reaches it as a new tool and a new revision. Ctrl-C during a
// build leaves no build behind.
func TestDevLoopFreshTypeScript(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	bin := testenv.Mcpepoch(t)
	_, npm := testenv.LookNode(t)
	example := filepath.Join(testenv.RepoRoot(t), "examples", "inventory-node")
	testenv.NPM(t, example)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + filepath.Dir(task) + string(os.PathListSeparator) + os.Getenv("PATH"), "NO_COLOR=1"}
	run := func(name string, args ...string) string {
		t.Helper()
		out, code := testenv.Run(t, dir, env, name, args...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, out)
		}
		return out.Combined
	}
	run(npm, "init", "-y")
	run(npm, "pkg", "set", "type=module")
	if err := os.Symlink(filepath.Join(example, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "tsconfig.json"), freshTSConfig)
	writeFile(t, filepath.Join(dir, "src", "index.ts"), serverTS)

	out := run(bin, "init", "--yes")
	for _, want := range []string{"+++ b/Taskfile.yml", "+++ b/.mcp.json", "wrote mcpepoch.toml", `"noEmitOnError": true`} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	if out := run(bin, "init", "--yes"); !strings.Contains(out, "nothing to change") {
		t.Errorf("second init:\n%s", out)
	}
	f, err := os.OpenFile(filepath.Join(dir, "mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[grants]\nexempt = [\"weather_*\"]\n")
	f.Close()

	dev := startDev(t, dir, env, bin)
	dev.waitFor(t, "build complete")
	if out, code := testenv.Run(t, dir, env, bin, "doctor"); code != 0 {
		t.Errorf("doctor after init and the first build: exit %d\n%s", code, out)
	}

	c := testenv.Driver(t, dir, env, configured(t, dir)...)
	if names := tools(t, c); strings.Join(names, ",") != "weather_now" {
		t.Fatalf("tools %q", names)
	}
	callText(t, c, "weather_now", "revision=A")
	src := strings.NewReplacer(`"A"`, `"B"`, `["weather_now"]`, `["weather_now", "weather_alerts"]`).Replace(serverTS)
	writeFile(t, filepath.Join(dir, "src", "index.ts"), src)
	if _, err := c.WaitListChanged(1, 30*time.Second); err != nil {
		t.Fatalf("no list_changed after the save: %v\ndev:\n%s", err, dev.String())
	}
	if names := tools(t, c); strings.Join(names, ",") != "weather_now,weather_alerts" {
		t.Errorf("tools after the save %q", names)
	}
	callText(t, c, "weather_now", "revision=B")
	dev.waitFor(t, "server restarted")

	// Ctrl-C while a build runs.
	writeFile(t, filepath.Join(dir, "src", "index.ts"), strings.Replace(src, `"B"`, `"C"`, 1))
	dev.waitFor(t, "building")
	dev.waitFor(t, "[build] node_modules/.bin/tsc") // go-task started tsc
	dev.interrupt(t)
	if left := buildsIn(dir); len(left) > 0 {
		t.Errorf("processes of the build left after Ctrl-C: %q", left)
	}
}

type devProc struct {
	seen int // how much of out waitFor has looked at
	cmd  *exec.Cmd
	out  *os.File // a file, not a pipe: Wait returns when dev exits, not when the last writer does
	done chan error
}

func (d *devProc) String() string {
	b, _ := os.ReadFile(d.out.Name())
	return string(b)
}

func startDev(t *testing.T, dir string, env []string, bin string, args ...string) *devProc {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "dev.out"))
	if err != nil {
		t.Fatal(err)
	}
	d := &devProc{cmd: exec.Command(bin, append([]string{"dev", "-v"}, args...)...), out: out, done: make(chan error, 1)}
	d.cmd.Dir, d.cmd.Env = dir, testenv.Environ(env...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		// Only while dev has not been reaped: after that its pid, and
		// so its group id, may already be another test's (every
		// testenv.Run command leads a group of its own).
		select {
		case err := <-d.done:
			d.done <- err
		default:
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			d.done <- <-d.done
		}
		t.Logf("mcpepoch dev:\n%s", d.String())
	})
	return d
}

// waitFor waits for a line containing s that came after the last one
// waited for.
func (d *devProc) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if i := strings.Index(d.String()[d.seen:], s); i >= 0 {
			d.seen += i + len(s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("mcpepoch dev never said %q:\n%s", s, d.String())
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for a clean exit.
func (d *devProc) interrupt(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Errorf("mcpepoch dev after SIGINT: %v\n%s", err, d.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("mcpepoch dev still running 15 s after SIGINT:\n%s", d.String())
	}
	if !strings.Contains(d.String(), "no build left running") {
		t.Errorf("dev did not say it stopped cleanly:\n%s", d.String())
	}
}

// configured returns the command line .mcp.json launches the server with.
func configured(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || len(cfg.MCPServers) != 1 {
		t.Fatalf(".mcp.json: %v\n%s", err, b)
	}
	for _, s := range cfg.MCPServers {
		if !filepath.IsAbs(s.Command) {
			t.Errorf(".mcp.json launches %q, not an absolute path", s.Command)
		}
		return append([]string{s.Command}, s.Args...)
	}
	return nil
}

func tools(t *testing.T, c *testenv.Client) []string {
	t.Helper()
	ts, rerr := c.List()
	if rerr != nil {
		t.Fatalf("tools/list: %v", rerr)
	}
	return testenv.ToolNames(ts)
}

func callText(t *testing.T, c *testenv.Client, tool, want string) {
	t.Helper()
	res, rerr := c.Call(tool, nil)
	if rerr != nil {
		t.Fatalf("%s: %v", tool, rerr)
	}
	if !strings.Contains(res.Text(), want) {
		t.Errorf("%s answered %q, want %q", tool, res.Text(), want)
	}
}

// buildsIn lists the processes (pid and command) that run task, make or
// tsc in dir, from /proc; nothing where there is no /proc.
func buildsIn(dir string) []string {
	if runtime.GOOS != "linux" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != dir {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cl := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		if strings.Contains(cl, "tsc") || strings.Contains(cl, "task") || strings.Contains(cl, "make") {
			out = append(out, strconv.Itoa(pid)+" "+cl)
		}
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A script server with no build step (python3 server.py): init names no
// source that holds code (mcpepoch.toml only), and dev watches the
// project instead, so that a save of a module the server imports is a
// new epoch, as for a built server.
func TestDevScriptServerSaveIsNewEpoch(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	pyLookPython(t)
	bin := testenv.Mcpepoch(t)
	dir := ideTempDir(t)
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + filepath.Dir(task) + string(os.PathListSeparator) + os.Getenv("PATH"), "NO_COLOR=1"}
	ideWrite(t, dir, "server.py", strings.Replace(pyServer, "%s", "helper", 1), 0o644)
	ideWrite(t, dir, "helper.py", "X = 'good'\n", 0o644)
	if out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--command", "python3 server.py"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	f, err := os.OpenFile(filepath.Join(dir, "mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[grants]\nexempt = [\"lib\"]\n")
	f.Close()
	dev := startDev(t, dir, env, bin)
	dev.waitFor(t, "build complete")
	cs, _ := ideHost(t, dir, nil)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	ideWrite(t, dir, "helper.py", "X = 'saved'\n", 0o644)
	dev.waitFor(t, "build complete: . changed")
	dev.waitFor(t, "server restarted")
	if got := pyCall(t, cs); got != "X=saved" {
		t.Errorf("lib after the save = %q, want X=saved\ndev:\n%s", got, dev.String())
	}
	dev.interrupt(t)
}
