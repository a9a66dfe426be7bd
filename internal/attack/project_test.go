package attack_test

// The project an attack runs against, its host and MCP client, and the
// person.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// waitLong bounds every wait for what takes a second or two on an idle
// machine.
const waitLong = 30 * time.Second

// credPolicy is credProject's mcpepoch.toml: every tool but env needs a
// grant, proven at the default level (terminal or client: nothing is
// enrolled in the tests' trust store), and write_secret uses the scope
// api, whose secret the host takes from its own environment.
const credPolicy = `command = ["sh", "./server.sh"]

[host]
grace = "2s"

[grants]
exempt = ["env"]

[credentials.api]
tools = ["write_secret"]
env = "ATTACK_SECRET"
`

// project is a temporary project directory, absolute with symlinks
// resolved.
type project struct {
	t   *testing.T
	dir string
	// env is added to the environment of every host of the project: what
	// the MCP client's entry for it sets.
	env []string
	// secret is the value of credProject's env credential source, its
	// own: no process's environment may hold it once the host runs.
	secret string
}

// newProject makes an empty project. The attacks run on Linux only: its
// /proc, util-linux's script, bubblewrap.
func newProject(t *testing.T) *project {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the attacks run on Linux: /proc, util-linux's script, bubblewrap")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &project{t: t, dir: dir}
}

// credProject is a project served by host/testdata/credserver (bin/
// credserver, run by server.sh) under credPolicy. Its tools: write_secret
// asks the broker for api's secret during its call and answers "issued
// sha256:…" or "refused CODE: …"; env (exempt) answers the broker's
// socket; see credserver's doc for the rest.
func credProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t)
	var b [12]byte
	rand.Read(b[:])
	p.secret = "attack-env-secret-" + hex.EncodeToString(b[:])
	p.env = []string{"ATTACK_SECRET=" + p.secret}
	if err := os.Mkdir(p.path("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.copy(testenv.Build(t, "./host/testdata/credserver"), "bin/credserver", 0o755)
	p.write("server.sh", "#!/bin/sh\nexec ./bin/credserver\n")
	p.write("mcpepoch.toml", credPolicy)
	return p
}

func (p *project) path(name string) string { return filepath.Join(p.dir, name) }

// write replaces the project file name atomically, as a build does.
func (p *project) write(name, content string) {
	p.t.Helper()
	dst := p.path(name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(dst+".tmp", []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		p.t.Fatal(err)
	}
}

// copy copies the file from into the project as name, with mode.
func (p *project) copy(from, name string, mode os.FileMode) {
	p.t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(p.path(name), b, mode)
	}
	if err != nil {
		p.t.Fatal(err)
	}
}

// exists reports whether the project file name exists.
func (p *project) exists(name string) bool {
	_, err := os.Lstat(p.path(name))
	return err == nil
}

// cli runs mcpepoch args… in the project, as the person (or the test)
// does, with env added, and returns its output and exit status.
func (p *project) cli(env []string, args ...string) (testenv.Output, int) {
	p.t.Helper()
	return testenv.Run(p.t, p.dir, env, testenv.Mcpepoch(p.t), args...)
}

// must runs mcpepoch args… in the project and fails the test unless it
// exits 0.
func (p *project) must(args ...string) string {
	p.t.Helper()
	out, code := p.cli(nil, args...)
	if code != 0 {
		p.t.Fatalf("mcpepoch %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out.Stdout
}

// status returns the status of the host of run.
func (p *project) status(run string) host.Status {
	p.t.Helper()
	out, code := p.cli(nil, "status", "--json")
	if code != 0 && code != 4 && code != 6 {
		p.t.Fatalf("mcpepoch status --json: exit %d\n%s", code, out)
	}
	var all []host.Status
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil {
		p.t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, s := range all {
		if string(s.AgentRun) == run {
			return s
		}
	}
	p.t.Fatalf("status --json: no host serves agent run %s\n%s", run, out)
	return host.Status{}
}

// ready waits until the host of run is ready with a known catalog (what a
// person needs before approving) and returns its status.
func (p *project) ready(run string) host.Status {
	p.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s := p.status(run)
		if s.State == host.StateReady && s.Catalog != "" && s.Execution != nil {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("host of run %s: state %s, catalog %q after %s", run, s.State, s.Catalog, waitLong)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// records returns the project's audit log as mcpepoch audit show --json
// prints it.
func (p *project) records() []audit.Record {
	p.t.Helper()
	var recs []audit.Record
	sc := bufio.NewScanner(strings.NewReader(p.must("audit", "show", "--json")))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			p.t.Fatalf("audit show --json: %v\n%s", err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	return recs
}

// waitRecord waits for a record of type typ for which match holds (nil:
// any) and returns it.
func (p *project) waitRecord(typ string, match func(audit.Record) bool) audit.Record {
	p.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		for _, r := range p.records() {
			if r.Type == typ && (match == nil || match(r)) {
				return r
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("audit log: no %s record after %s", typ, waitLong)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ofType returns the records of type typ.
func ofType(recs []audit.Record, typ string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// listeningRe matches the line a host logs once its socket listens.
var listeningRe = regexp.MustCompile(`(?m)agent run (\S+): listening on (.+)$`)

// session is the MCP client (a go-sdk client in this test process) of
// one host of a project.
type session struct {
	t      *testing.T
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *testenv.Buffer
	run    string
	closed bool
}

// connect starts mcpepoch host for the project, with the project's env
// and env added to its environment, under a go-sdk client, lists its tools and waits until it
// is ready. command is the server (default sh ./server.sh). The client
// closes in t.Cleanup.
func connect(t *testing.T, p *project, env []string, command ...string) *session {
	t.Helper()
	if len(command) == 0 {
		command = []string{"sh", "./server.sh"}
	}
	return connectArgv(t, p, env, append([]string{testenv.Mcpepoch(t), "host", "--dir", p.dir, "--"}, command...))
}

// connectArgv is connect with the whole command line of the host: argv
// runs mcpepoch host --dir p.dir, wrapped as the test needs.
func connectArgv(t *testing.T, p *project, env []string, argv []string) *session {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ(append(slices.Clone(p.env), env...)...)
	s := &session{t: t, cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "attack-test", Version: "0.1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect %v: %v\nstderr:\n%s", cmd.Args, err, s.stderr)
	}
	s.cs = cs
	t.Cleanup(s.close)
	deadline := time.Now().Add(waitLong)
	for !listeningRe.MatchString(s.stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the host did not report its agent run:\n%s", s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.run = listeningRe.FindStringSubmatch(s.stderr.String())[1]
	lctx, lcancel := context.WithTimeout(context.Background(), waitLong)
	defer lcancel()
	if _, err := cs.ListTools(lctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	p.ready(s.run)
	return s
}

// close closes the client, which ends the host; a host that does not
// exit within the transport's own bounds is killed.
func (s *session) close() {
	if s.closed {
		return
	}
	s.closed = true
	done := make(chan struct{})
	go func() { s.cs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLong):
		s.t.Errorf("the client session did not close within %s: killing the host", waitLong)
		s.cmd.Process.Kill()
		<-done
	}
	if s.t.Failed() {
		s.t.Logf("host stderr:\n%s", s.stderr)
	}
}

// call calls a tool and returns its text, or the JSON-RPC error the host
// (or the server) answered.
func (s *session) call(name string, args map[string]any) (string, *jsonrpc.Error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return "", werr
	}
	if err != nil {
		s.t.Fatalf("call %s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		s.t.Fatalf("call %s: tool error %q", name, text)
	}
	return text, nil
}

// text calls a tool that must answer and returns its text.
func (s *session) text(name string, args map[string]any) string {
	s.t.Helper()
	text, err := s.call(name, args)
	if err != nil {
		s.t.Fatalf("call %s: %v", name, err)
	}
	return text
}

// refused calls a tool that the host must refuse with code, its message
// starting with prefix and naming each of next (what to do next), and
// returns the message.
func (s *session) refused(name string, args map[string]any, code int64, prefix string, next ...string) string {
	s.t.Helper()
	text, err := s.call(name, args)
	if err == nil {
		s.t.Fatalf("call %s: answered %q, want error %d %s…", name, text, code, prefix)
	}
	if err.Code != code || !strings.HasPrefix(err.Message, prefix) {
		s.t.Fatalf("call %s: error %d %q, want %d %s…", name, err.Code, err.Message, code, prefix)
	}
	wantIn(s.t, "the refusal of "+name, err.Message, next...)
	return err.Message
}

// approveRe matches the line mcpepoch approve prints once a grant is made.
var approveRe = regexp.MustCompile(`approved: grant (\S+) for agent run (\S+), epoch (\S+):`)

// personApprove approves args (mcpepoch approve's flags) for run as a
// person does: at a terminal of their own, a session that does not
// descend from the MCP client (script in a session setsid detached from
// this process), answering y. It returns the grant's id.
func (p *project) personApprove(run string, args ...string) string {
	p.t.Helper()
	out, rc := detachedTerminal(p.t, p.dir, nil, "$MCPEPOCH_BIN approve --run "+run+" "+strings.Join(args, " "))
	m := approveRe.FindStringSubmatch(out)
	if rc != "0" || m == nil {
		p.t.Fatalf("the person's approval: exit %s\n%s", rc, out)
	}
	return m[1]
}

// detachedTerminal runs command (a shell command line; $MCPEPOCH_BIN is
// the mcpepoch binary) in the directory dir, in a pseudo-terminal (script)
// in a session of its own that setsid detached from this process, as a
// person's terminal is, answering y; env is added to its environment. It
// returns what the terminal showed and the exit status.
func detachedTerminal(t *testing.T, dir string, env []string, command string) (string, string) {
	t.Helper()
	needTerminalTools(t)
	tmp := t.TempDir()
	out, rc := filepath.Join(tmp, "term.out"), filepath.Join(tmp, "term.rc")
	cmd := exec.Command("setsid", "-f", "sh", "-c",
		`i=0; until [ -e "$GO" ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done; printf 'y\n' | script -qec "$COMMAND" /dev/null >"$OUT" 2>&1; echo $? >"$RC.tmp"; mv "$RC.tmp" "$RC"`)
	cmd.Dir = dir
	cmd.Env = testenv.Environ(append(env, "MCPEPOCH_BIN="+testenv.Mcpepoch(t), "SHELL=/bin/sh", "COMMAND="+command,
		"OUT="+out, "RC="+rc, "GO="+filepath.Join(tmp, "go"))...)
	if err := cmd.Run(); err != nil { // no output captured: the shell it leaves running would hold the pipe
		t.Fatalf("setsid -f: %v", err)
	}
	// setsid -f has exited: what it forked no longer descends from this
	// process (until then it did, and an approval would be refused).
	if err := os.WriteFile(filepath.Join(tmp, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLong)
	for {
		if b, err := os.ReadFile(rc); err == nil {
			printed, _ := os.ReadFile(out)
			return string(printed), strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			printed, _ := os.ReadFile(out)
			t.Fatalf("%s in a detached terminal did not end within %s:\n%s", command, waitLong, printed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing the test after waitLong.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLong, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fields renders a record's fields for a failure message.
func fields(r audit.Record) string { return fmt.Sprint(r.Fields) }

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) (int, error) { return strconv.Atoi(s) }
