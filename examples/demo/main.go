// Command demo shows mcpepoch at work on the bundled Go example server,
// examples/inventory-go, with nothing but Go installed. From anywhere inside
// the repository:
//
//	go run ./examples/demo
//
// In a temporary project directory it:
//
//  1. builds the mcpepoch CLI from this repository and the example server
//     (revision A), and writes an mcpepoch.toml;
//  2. records the first build with `mcpepoch record`;
//  3. connects a go-sdk MCP client that launches `mcpepoch host --
//     ./bin/inventory-server`, as an agent's client would;
//  4. lists the tools and calls inventory_adjust, which the host refuses
//     until a person approves with `mcpepoch approve` (scripted here with
//     --yes --all), then calls inventory_adjust and inventory_lookup;
//  5. rebuilds the server with a new tool (inventory_history, laid over the
//     package with go build -overlay) as revision B and records the build:
//     the host restarts the server under a new execution epoch, and the
//     grant, bound to the old epoch, ends;
//  6. shows the client receiving notifications/tools/list_changed, listing
//     three tools, being refused with a stale grant, and, after a new
//     approval that shows what changed, calling the new tool;
//  7. rebuilds identically and records: the running server and its grant
//     are left alone;
//  8. prints `mcpepoch status`.
//
// Output lines are labelled by who speaks: [hook] is mcpepoch record,
// [approve] is mcpepoch approve, [host] is mcpepoch host, [server] is the
// example server's own log, [status] is mcpepoch status, and [client] is
// what the MCP client sees. The demo checks every step and exits with status
// 1 and a message naming the step when one does not happen as
// expected, so it doubles as a smoke test (see demo_test.go).
//
// Flags:
//
//	-keep               keep the temporary directory and print its path
//	-protocol VERSION   MCP protocol version the client asks for
//	                    (default 2025-11-25, the initialize handshake)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// modulePath is the module the demo builds mcpepoch from.
const modulePath = "github.com/mcpepoch/mcpepoch"

// label is the server label written to the demo project's mcpepoch.toml.
const label = "inventory-demo"

// defaultProtocol is the MCP protocol version the demo's client asks for by
// default: the handshake era (initialize, then notifications/initialized),
// whose initialize the host replays to every new server process.
const defaultProtocol = "2025-11-25"

// Timeouts. They bound waits for things that normally take well under a
// second; builds are not bounded.
const (
	callTimeout   = 30 * time.Second // one MCP request
	noticeTimeout = 15 * time.Second // list_changed after a restart
	quietPeriod   = 500 * time.Millisecond
)

func main() {
	keep := flag.Bool("keep", false, "keep the temporary directory and print its path")
	protocol := flag.String("protocol", defaultProtocol, "MCP protocol version the client asks for")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./examples/demo [-keep] [-protocol VERSION]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, options{Keep: *keep, Protocol: *protocol}); err != nil {
		fmt.Fprintf(os.Stderr, "demo: FAILED: %v\n", err)
		os.Exit(1)
	}
}

// options configure run.
type options struct {
	// Keep leaves the temporary directory in place.
	Keep bool
	// Protocol is the MCP protocol version the client asks for; empty means
	// defaultProtocol.
	Protocol string
	// Dir, if set, is the directory to search upwards from for the module
	// root; empty means the working directory.
	Dir string
}

// demo is one run: its paths, its output and what it has seen so far.
type demo struct {
	out    *printer
	goTool string
	root   string // module root of this repository
	tmp    string // temporary directory, removed at the end
	bin    string // tmp/bin/mcpepoch
	proj   string // tmp/project: the demo project root
	step   string // current step, for error messages

	protocol string        // MCP protocol version the client asks for
	notices  chan struct{} // one value per notifications/tools/list_changed
}

// run performs the demo, writing the narrative to w. The error names the
// step that failed.
func run(ctx context.Context, w io.Writer, opts options) (err error) {
	d := &demo{out: &printer{w: w}, notices: make(chan struct{}, 64), protocol: opts.Protocol}
	if d.protocol == "" {
		d.protocol = defaultProtocol
	}
	start := time.Now()

	if d.goTool, err = exec.LookPath("go"); err != nil {
		return fmt.Errorf("the go command is needed: %v", err)
	}
	if d.root, err = moduleRoot(opts.Dir); err != nil {
		return err
	}
	if d.tmp, err = os.MkdirTemp("", "mcpepoch-demo-"); err != nil {
		return err
	}
	// Resolve symlinks (macOS's /var → /private/var) so that paths printed
	// here match the ones mcpepoch prints.
	if d.tmp, err = filepath.EvalSymlinks(d.tmp); err != nil {
		return err
	}
	defer func() {
		if opts.Keep {
			d.out.line("", "kept %s", d.tmp)
			return
		}
		os.RemoveAll(d.tmp)
	}()
	d.bin = filepath.Join(d.tmp, "bin", "mcpepoch")
	d.proj = filepath.Join(d.tmp, "project")
	if err := os.MkdirAll(filepath.Join(d.proj, "bin"), 0o755); err != nil {
		return err
	}

	if err := d.buildAll(ctx); err != nil {
		return err
	}
	if err := d.firstRecord(ctx); err != nil {
		return err
	}
	session, hp, err := d.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.disconnect(session, hp); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := d.useRevisionA(ctx, session); err != nil {
		return err
	}
	rs, err := d.rebuildB(ctx)
	if err != nil {
		return err
	}
	if err := d.useRevisionB(ctx, session); err != nil {
		return err
	}
	if err := d.rebuildSame(ctx, session, rs); err != nil {
		return err
	}
	if err := d.status(ctx, rs); err != nil {
		return err
	}
	d.heading("9. Disconnect")
	d.out.line("", "(the client closes the host's stdin; the host stops the server and exits)")
	if err := d.disconnect(session, hp); err != nil {
		return d.fail("%v", err)
	}
	d.out.line("", "")
	d.out.line("", "demo complete in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// heading starts a step.
func (d *demo) heading(title string) {
	d.step = title
	d.out.line("", "")
	d.out.line("", "== %s", title)
}

// fail returns an error naming the current step.
func (d *demo) fail(format string, args ...any) error {
	return fmt.Errorf("step %q: %s", d.step, fmt.Sprintf(format, args...))
}

// buildAll is step 1.
func (d *demo) buildAll(ctx context.Context) error {
	d.heading("1. Build mcpepoch and the example server (revision A)")
	d.out.line("", "module root %s", d.root)
	d.out.line("", "project     %s", d.proj)
	if err := d.goBuild(ctx, d.root, "-o", d.bin, "./cmd/mcpepoch"); err != nil {
		return err
	}
	if err := d.buildServer(ctx); err != nil {
		return err
	}
	// The demo approves with --yes, which proves no person: it counts only
	// where the proof list names same-user.
	toml := "label = \"" + label + "\"\ncommand = [\"./bin/inventory-server\"]\n\n[grants]\nproof = [\"same-user\"]  # approve --yes counts: no person is proven\n"
	if err := os.WriteFile(filepath.Join(d.proj, "mcpepoch.toml"), []byte(toml), 0o644); err != nil {
		return d.fail("%v", err)
	}
	d.out.line("", "wrote project/mcpepoch.toml:")
	for _, l := range strings.Split(strings.TrimSpace(toml), "\n") {
		d.out.line("", "    %s", l)
	}
	return nil
}

// buildServer builds examples/inventory-go into the project's bin/ with extra
// go build flags.
func (d *demo) buildServer(ctx context.Context, flags ...string) error {
	args := append(slices.Clone(flags), "-o", filepath.Join(d.proj, "bin", "inventory-server"), ".")
	return d.goBuild(ctx, filepath.Join(d.root, "examples", "inventory-go"), args...)
}

// goBuild runs go build in dir, showing the command.
func (d *demo) goBuild(ctx context.Context, dir string, args ...string) error {
	args = append([]string{"build"}, args...)
	rel, _ := filepath.Rel(d.root, dir)
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = d.short(a)
		if strings.ContainsAny(a, " \"") {
			shown[i] = "'" + shown[i] + "'"
		}
	}
	if rel == "." {
		d.out.line("", "$ go %s", strings.Join(shown, " "))
	} else {
		d.out.line("", "$ (cd %s && go %s)", rel, strings.Join(shown, " "))
	}
	cmd := exec.CommandContext(ctx, d.goTool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return d.fail("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// short replaces the temporary directory in s with $TMP for display.
func (d *demo) short(s string) string {
	return strings.ReplaceAll(s, d.tmp, "$TMP")
}

// mcpepoch runs the mcpepoch CLI in the project with args, printing its
// stdout and stderr lines as they come under label, and returns them. A
// non-zero exit is an error.
func (d *demo) mcpepoch(ctx context.Context, label string, args ...string) ([]string, error) {
	d.out.line("", "$ mcpepoch %s", strings.Join(args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Dir = d.proj
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, d.fail("mcpepoch %s: %v", args[0], err)
	}
	var lines []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		d.out.line(label, "%s", d.short(sc.Text()))
	}
	pr.Close()
	if err := cmd.Wait(); err != nil {
		return lines, d.fail("mcpepoch %s: %v", args[0], err)
	}
	return lines, nil
}

// record runs mcpepoch record: the build hook.
func (d *demo) record(ctx context.Context) ([]string, error) {
	return d.mcpepoch(ctx, "[hook]", "record")
}

// approve runs mcpepoch approve for every tool of the current catalog, as a
// person at a terminal would after reading the review; --yes stands in for
// their answer.
func (d *demo) approve(ctx context.Context) ([]string, error) {
	d.out.line("", "(a person reviews what runs and approves; --yes --all stands in for their answers)")
	lines, err := d.mcpepoch(ctx, "[approve]", "approve", "--yes", "--all")
	if err != nil {
		return lines, err
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "approved: grant ") {
			return lines, nil
		}
	}
	return lines, d.fail("mcpepoch approve printed no \"approved: grant …\" line")
}

// firstRecord is step 2.
func (d *demo) firstRecord(ctx context.Context) error {
	d.heading("2. Record the first build (no host is running yet)")
	lines, err := d.record(ctx)
	if err != nil {
		return err
	}
	if err := expectLine(lines, "build complete: first build recorded"); err != nil {
		return d.fail("%v", err)
	}
	if err := expectLine(lines, "no host reachable over the socket; hosts watching the manifest will see this build"); err != nil {
		return d.fail("%v", err)
	}
	m, err := os.ReadFile(layout.Manifest(d.proj))
	if err != nil {
		return d.fail("run manifest: %v", err)
	}
	d.out.line("", "project/.mcpepoch/manifest.toml:")
	for _, l := range strings.Split(strings.TrimRight(string(m), "\n"), "\n") {
		d.out.line("", "    %s", d.short(l))
	}
	return nil
}

// hostProc is the mcpepoch host process the client launched.
type hostProc struct {
	cmd        *exec.Cmd
	stderrDone chan struct{} // closed when every writer of the host's stderr has exited
	closed     bool
}

// connect is step 3.
func (d *demo) connect(ctx context.Context) (*mcp.ClientSession, *hostProc, error) {
	d.heading("3. Connect an MCP client through mcpepoch host")
	d.out.line("", "the client launches: mcpepoch host -- ./bin/inventory-server   (in the project)")

	// The host's stderr (and its server's, which inherits it) goes to a
	// pipe of our own, so that it can be read to the end.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(d.bin, "host", "--", "./bin/inventory-server")
	cmd.Dir = d.proj
	cmd.Env = append(os.Environ(), "INVENTORY_DATA_DIR="+filepath.Join(d.proj, "data"))
	cmd.Stderr = pw
	h := &hostProc{cmd: cmd, stderrDone: make(chan struct{})}
	go func() {
		defer close(h.stderrDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "mcpepoch host: "):
				d.out.line("[host]", "%s", d.short(strings.TrimPrefix(l, "mcpepoch host: ")))
			case strings.HasPrefix(l, "inventory-server: "):
				d.out.line("[server]", "%s", d.short(strings.TrimPrefix(l, "inventory-server: ")))
			default:
				d.out.line("[host]", "%s", d.short(l))
			}
		}
		pr.Close()
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "mcpepoch-demo", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			d.out.line("[client]", "← notifications/tools/list_changed")
			select {
			case d.notices <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	session, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: d.protocol})
	pw.Close() // the host has its own copy now, or never started
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		waitOrTimeout(h.stderrDone, 5*time.Second)
		return nil, nil, d.fail("connect: %v", err)
	}
	res := session.InitializeResult()
	d.out.line("[client]", "connected: protocol %s, server %s %s", res.ProtocolVersion, res.ServerInfo.Name, res.ServerInfo.Version)
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		session.Close()
		return nil, nil, d.fail("the initialize result does not advertise capabilities.tools.listChanged")
	}
	d.out.line("[client]", "capabilities.tools.listChanged = true (the host always advertises it)")
	return session, h, nil
}

// disconnect closes the session and waits for the host and its server to
// exit. It is safe to call twice.
func (d *demo) disconnect(session *mcp.ClientSession, h *hostProc) error {
	if h.closed {
		return nil
	}
	h.closed = true
	err := session.Close()
	if !waitOrTimeout(h.stderrDone, 15*time.Second) {
		return errors.New("the host or its server did not exit within 15s of the client closing the connection")
	}
	if err != nil {
		return fmt.Errorf("close: %v", err)
	}
	return nil
}

func waitOrTimeout(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// listTools lists the tools and returns their names, sorted.
func (d *demo) listTools(ctx context.Context, s *mcp.ClientSession) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d.out.line("[client]", "→ tools/list")
	res, err := s.ListTools(cctx, nil)
	if err != nil {
		return nil, d.fail("tools/list: %v", err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	d.out.line("[client]", "← %d tools: %s", len(names), strings.Join(names, ", "))
	return names, nil
}

// call calls a tool and returns its text; a tool error is an error.
func (d *demo) call(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	a, _ := json.Marshal(args)
	d.out.line("[client]", "→ tools/call %s %s", name, a)
	res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", d.fail("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	text := strings.TrimRight(b.String(), "\n")
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			d.out.line("[client]", "← %s", l)
		} else {
			d.out.line("[client]", "  %s", l)
		}
	}
	if res.IsError {
		return text, d.fail("tools/call %s: the tool reported an error: %s", name, text)
	}
	return text, nil
}

// refused calls a tool and expects the host to refuse the call with a
// JSON-RPC error of the given code.
func (d *demo) refused(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any, code int64) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	a, _ := json.Marshal(args)
	d.out.line("[client]", "→ tools/call %s %s", name, a)
	res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return d.fail("tools/call %s was answered (isError=%v); want the host's error %d", name, res.IsError, code)
	case !errors.As(err, &je):
		return d.fail("tools/call %s: %v; want the host's error %d", name, err, code)
	}
	d.out.line("[client]", "← error %d: %s", je.Code, je.Message)
	if je.Code != code {
		return d.fail("tools/call %s: error %d, want %d", name, je.Code, code)
	}
	return nil
}

// useRevisionA is step 4.
func (d *demo) useRevisionA(ctx context.Context, s *mcp.ClientSession) error {
	d.heading("4. The client uses revision A, once a person approves")
	names, err := d.listTools(ctx, s)
	if err != nil {
		return err
	}
	if want := []string{"inventory_adjust", "inventory_lookup"}; !slices.Equal(names, want) {
		return d.fail("tools = %v, want %v", names, want)
	}
	args := map[string]any{"sku": "widget", "delta": 5}
	if err := d.refused(ctx, s, "inventory_adjust", args, host.CodeAuthorizationRequired); err != nil {
		return err
	}
	if _, err := d.approve(ctx); err != nil {
		return err
	}
	if _, err := d.call(ctx, s, "inventory_adjust", args); err != nil {
		return err
	}
	got, err := d.call(ctx, s, "inventory_lookup", map[string]any{"sku": "widget"})
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=A"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	return nil
}

// restart is what mcpepoch record reported for the rebuild.
type restart struct {
	oldEpoch, newEpoch string
	oldPID, newPID     string
}

// restartedRE matches mcpepoch record's line for a host that restarted its
// server; what follows "; " says what else happened (grants revoked).
var restartedRE = regexp.MustCompile(`^server restarted: epoch ([0-9A-Z]{26}) → ([0-9A-Z]{26}), pid ([0-9]+) → ([0-9]+)(; .*)?$`)

// rebuildB is step 5.
func (d *demo) rebuildB(ctx context.Context) (restart, error) {
	d.heading("5. Change the code: add inventory_history, build revision B, record")
	d.drainNotices()
	if err := d.buildServer(ctx, "-overlay", "testdata/overlay.json", "-ldflags", "-X main.revision=B"); err != nil {
		return restart{}, err
	}
	lines, err := d.record(ctx)
	if err != nil {
		return restart{}, err
	}
	if err := expectChanged(lines, "bin/inventory-server"); err != nil {
		return restart{}, d.fail("%v", err)
	}
	for _, l := range lines {
		if m := restartedRE.FindStringSubmatch(l); m != nil {
			r := restart{oldEpoch: m[1], newEpoch: m[2], oldPID: m[3], newPID: m[4]}
			if r.oldEpoch == r.newEpoch || r.oldPID == r.newPID {
				return restart{}, d.fail("the restart kept its epoch or pid: %q", l)
			}
			return r, nil
		}
	}
	return restart{}, d.fail("mcpepoch record did not report a restart (want a line matching %q)", restartedRE)
}

// useRevisionB is step 6.
func (d *demo) useRevisionB(ctx context.Context, s *mcp.ClientSession) error {
	d.heading("6. The client is told and re-lists; the grant ended with epoch A")
	select {
	case <-d.notices:
	case <-time.After(noticeTimeout):
		return d.fail("the client received no notifications/tools/list_changed within %s", noticeTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	names, err := d.listTools(ctx, s)
	if err != nil {
		return err
	}
	if want := []string{"inventory_adjust", "inventory_history", "inventory_lookup"}; !slices.Equal(names, want) {
		return d.fail("tools = %v, want %v", names, want)
	}
	lookup := map[string]any{"sku": "widget"}
	if err := d.refused(ctx, s, "inventory_lookup", lookup, host.CodeAuthorizationStale); err != nil {
		return err
	}
	if _, err := d.approve(ctx); err != nil {
		return err
	}
	got, err := d.call(ctx, s, "inventory_history", lookup)
	if err != nil {
		return err
	}
	if want := "sku=widget revision=B\ndelta=+5 quantity=5 revision=A"; got != want {
		return d.fail("inventory_history = %q, want %q", got, want)
	}
	got, err = d.call(ctx, s, "inventory_lookup", lookup)
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=B"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	return nil
}

// rebuildSame is step 7.
func (d *demo) rebuildSame(ctx context.Context, s *mcp.ClientSession, r restart) error {
	d.heading("7. Rebuild the same code and record: nothing restarts, the grant holds")
	d.drainNotices()
	if err := d.buildServer(ctx, "-overlay", "testdata/overlay.json", "-ldflags", "-X main.revision=B"); err != nil {
		return err
	}
	lines, err := d.record(ctx)
	if err != nil {
		return err
	}
	if err := expectLine(lines, "build complete: nothing changed"); err != nil {
		return d.fail("%v", err)
	}
	if err := expectLine(lines, fmt.Sprintf("running server unchanged: pid=%s epoch=%s", r.newPID, r.newEpoch)); err != nil {
		return d.fail("%v", err)
	}
	// Nothing restarted, so no list_changed is due; give a wrong one a
	// moment to arrive.
	select {
	case <-d.notices:
		return d.fail("the client received notifications/tools/list_changed although nothing changed")
	case <-time.After(quietPeriod):
	}
	d.out.line("[client]", "(no notification: nothing restarted)")
	// Same epoch, so the grant still holds.
	got, err := d.call(ctx, s, "inventory_lookup", map[string]any{"sku": "widget"})
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=B"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	return nil
}

// status is step 8.
func (d *demo) status(ctx context.Context, r restart) error {
	d.heading("8. mcpepoch status")
	lines, err := d.mcpepoch(ctx, "[status]", "status")
	if err != nil {
		return err
	}
	text := strings.Join(lines, "\n")
	if want := "(" + label + "): ready"; !strings.Contains(text, want) {
		return d.fail("status does not say %q", want)
	}
	if !strings.Contains(text, r.newEpoch) {
		return d.fail("status does not name epoch %s", r.newEpoch)
	}
	return nil
}

// drainNotices forgets notifications received so far.
func (d *demo) drainNotices() {
	for {
		select {
		case <-d.notices:
		default:
			return
		}
	}
}

// expectLine returns an error unless lines contains want.
func expectLine(lines []string, want string) error {
	if slices.Contains(lines, want) {
		return nil
	}
	return fmt.Errorf("mcpepoch record did not print %q (it printed %q)", want, lines)
}

// expectChanged returns an error unless lines has a "build complete: … changed"
// line naming path among the changed files.
func expectChanged(lines []string, path string) error {
	for _, l := range lines {
		files, ok := strings.CutPrefix(l, "build complete: ")
		if !ok {
			continue
		}
		if files, ok = strings.CutSuffix(files, " changed"); ok && slices.Contains(strings.Split(files, ", "), path) {
			return nil
		}
	}
	return fmt.Errorf("mcpepoch record did not print \"build complete: %s changed\" (it printed %q)", path, lines)
}

// moduleRoot walks up from dir (the working directory when empty) to the
// directory whose go.mod declares modulePath.
func moduleRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && declares(data, modulePath) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod for module %s in %s or above: run the demo from inside the mcpepoch repository", modulePath, dir)
		}
		d = parent
	}
}

// declares reports whether go.mod content gomod has the module line path.
func declares(gomod []byte, path string) bool {
	for _, l := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// printer writes whole lines from several goroutines: a label column, then
// the text.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

// line writes one line: a heading ("== …") flush left, unlabelled text
// indented, labelled text after its label.
func (p *printer) line(label, format string, args ...any) {
	text := strings.TrimRight(fmt.Sprintf(format, args...), " ")
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.TrimSpace(text) == "" && label == "":
		fmt.Fprintln(p.w)
	case label == "" && strings.HasPrefix(text, "=="):
		fmt.Fprintln(p.w, text)
	case label == "":
		fmt.Fprintf(p.w, "   %s\n", text)
	default:
		fmt.Fprintf(p.w, "   %-10s%s\n", label, text)
	}
}
