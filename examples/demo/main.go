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
//     --yes --all), then calls inventory_adjust, inventory_lookup and
//     inventory_order, which the host hands the supplier token (from its
//     own environment, never the server's) for that approved call;
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
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/trust"
)

// modulePath is the module the demo builds mcpepoch from.
const modulePath = "github.com/mcpepoch/mcpepoch"

// supplierVar holds the supplier token in the host's environment: the
// source of the demo's credential scope inventory-supplier. The host
// leaves it out of the server's environment and hands the value over its
// broker only to an approved inventory_order call.
const (
	supplierVar   = "INVENTORY_SUPPLIER_TOKEN"
	supplierToken = "demo-supplier-token"
)

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
	d.bin = filepath.Join(d.tmp, "bin", "mcpepoch")
	d.proj = filepath.Join(d.tmp, "project")
	defer func() {
		d.dropFloor()
		if opts.Keep {
			d.out.line("", "kept %s", d.tmp)
			return
		}
		os.RemoveAll(d.tmp)
	}()
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

// env is the environment of the mcpepoch commands the demo runs: the
// user's, with extra.
func (d *demo) env(extra ...string) []string {
	return append(os.Environ(), extra...)
}

// dropFloor removes what the host kept for the temporary project in the
// user's own directories, for a directory that is about to be gone: its
// policy floor (config directory) and the copy of its audit head (state
// directory). mcpepoch takes them from the account database, not the
// environment (internal/userdirs), so the demo cannot give its commands
// directories of their own.
func (d *demo) dropFloor() {
	if st, err := layout.ProjectState(d.proj); err == nil && d.proj != "" {
		os.RemoveAll(st)
	}
	if dir, err := trust.DefaultDir(); err == nil && d.proj != "" {
		os.Remove(trust.FloorPath(dir, d.proj))
	}
}
