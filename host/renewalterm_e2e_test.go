package host_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// terminal is a command run in a pseudo-terminal (script -qec), whose
// keys the test types once the screen shows what it waits for. A
// person's terminal (own) is a session of its own that does not descend
// from the MCP client (setsid -f, reading keys from a FIFO); otherwise it
// is the test's child, as an agent's faked terminal would be.
type terminal struct {
	t    *testing.T
	p    *project
	name string
	keys *os.File
}

func needTerminalTools(t *testing.T) {
	t.Helper()
	needProc(t)
	testenv.Need(t, "script", testenv.InstallUtilLinux)
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
	testenv.Need(t, "mkfifo", testenv.InstallCoreutils)
}

// startTerminal runs command (a shell command line; $MCPEPOCH_BIN is the
// mcpepoch binary) in a terminal named name: its screen goes to
// name.out, its exit status to name.rc.
func (p *project) startTerminal(t *testing.T, env []string, own bool, name, command string) *terminal {
	t.Helper()
	fifo := p.path(name + ".keys")
	if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v\n%s", err, out)
	}
	inner := fmt.Sprintf(`script -qec "%s" /dev/null <%s >%s.out 2>&1; echo $? >%s.rc`, command, fifo, name, name)
	argv := []string{"sh", "-c", inner}
	if own {
		argv = []string{"setsid", "-f", "sh", "-c", inner}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// script runs command with $SHELL -c: pinned, so that every machine
	// runs it the same way (CI may have no SHELL, then it is /bin/sh).
	cmd.Dir, cmd.Env = p.dir, testenv.Environ(append(env, "MCPEPOCH_BIN="+testenv.Mcpepoch(t), "SHELL=/bin/sh")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if own {
		cmd.Wait() // setsid -f returns at once; the terminal lives on
	} else {
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	}
	keys, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until the shell opens it
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, p: p, name: name, keys: keys}
	t.Cleanup(func() {
		// A test that failed half-way leaves no terminal behind: Ctrl-C
		// ends what runs in it, the end of its keys ends script.
		if strings.TrimSpace(p.read(name+".rc")) == "" {
			keys.WriteString("\x03")
		}
		keys.Close()
	})
	return term
}

// screen is what the terminal showed so far.
func (c *terminal) screen() string { return c.p.read(c.name + ".out") }

// status is the exit status of what ran in the terminal, "" while it runs.
func (c *terminal) status() string { return strings.TrimSpace(c.p.read(c.name + ".rc")) }

// waitScreen waits until the screen shows want.
func (c *terminal) waitScreen(want string) {
	c.t.Helper()
	c.waitUntil(fmt.Sprintf("show %q", want), func(screen string) bool { return strings.Contains(screen, want) })
}

// waitMatch waits until the screen matches re and returns the match and
// its groups.
func (c *terminal) waitMatch(re *regexp.Regexp) []string {
	c.t.Helper()
	var m []string
	c.waitUntil("match "+re.String(), func(screen string) bool { m = re.FindStringSubmatch(screen); return m != nil })
	return m
}

// waitUntil polls the screen until cond holds. It fails the test, showing
// the screen and the exit status, after waitLong or as soon as what ran in
// the terminal has exited without cond holding: it can show nothing more.
func (c *terminal) waitUntil(what string, cond func(screen string) bool) {
	c.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		rc := c.status() // before the screen: the screen is complete once rc is written
		if cond(c.screen()) {
			return
		}
		switch {
		case rc != "":
			c.t.Fatalf("%s exited (status %s) before it could %s; screen:\n%s", c.name, rc, what, c.screen())
		case time.Now().After(deadline):
			c.t.Fatalf("waited %s for %s to %s (still running, no exit status); screen:\n%s", waitLong, c.name, what, c.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// press types s.
func (c *terminal) press(s string) {
	c.t.Helper()
	if _, err := c.keys.WriteString(s); err != nil {
		c.t.Fatal(err)
	}
}

// exit closes the keyboard and returns the exit status.
// quit presses Ctrl-C in dev's window and fails the test unless dev
// exits.
func (c *terminal) quit() {
	c.t.Helper()
	c.press("\x03")
	if rc := c.exit(); rc == "" {
		c.t.Fatalf("dev did not exit on Ctrl-C:\n%s", c.screen())
	}
}

func (c *terminal) exit() string {
	c.t.Helper()
	c.keys.Close()
	return c.exitUnclosed()
}

// exitUnclosed waits for the exit status with the keyboard left open (no
// end of input reaches what runs in the terminal) and returns it.
func (c *terminal) exitUnclosed() string {
	c.t.Helper()
	deadline := time.Now().Add(waitLong)
	for c.status() == "" {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s to exit; screen:\n%s", waitLong, c.name, c.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c.status()
}

// approveAtTerminal approves everything agent run run asks for at a
// person's terminal (y, Enter) and fails the test unless approve exits 0.
func (p *project) approveAtTerminal(t *testing.T, env []string, run string) {
	t.Helper()
	first := p.startTerminal(t, env, true, "first", "$MCPEPOCH_BIN "+approveArgs(run))
	first.waitScreen("[y/N]")
	first.press("y\n")
	if rc := first.exit(); rc != "0" {
		t.Fatalf("first approval: exit %s\n%s", rc, first.screen())
	}
}

// TestRenewalOneKeyAtTerminal: at the default proof (terminal), a grant
// made at a person's terminal ends with a rebuild; mcpepoch approve then
// offers the renewal first, and one key (y, no Enter) approves it with
// proof terminal. The same key from a faked terminal the MCP client
// started is refused as any terminal approval from there is: the renewal
// changes the cost of an approval, not what proves a person.
func TestRenewalOneKeyAtTerminal(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	p.approveAtTerminal(t, env, s.run)
	s.text("slow_write", map[string]any{"key": "k"})

	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B"})
	p.cli("record")
	epB, _ := p.epoch(s.run)
	r := p.review(s.run).Renewal
	if r == nil || r.Epoch != epB {
		t.Fatalf("renewal after the rebuild: %+v", r)
	}

	agent := p.startTerminal(t, env, false, "agent", "$MCPEPOCH_BIN approve --run "+s.run)
	agent.waitScreen("y approve slow_write")
	agent.press("y")
	if rc := agent.exit(); rc == "0" || !strings.Contains(agent.screen(), "descends from the MCP client") {
		t.Fatalf("the renewal approved from the client's faked terminal: exit %s\n%s", rc, agent.screen())
	}

	person := p.startTerminal(t, env, true, "person", "$MCPEPOCH_BIN approve --run "+s.run)
	person.waitScreen("y approve slow_write")
	if sc := person.screen(); !strings.Contains(sc, r.ShortCode+": epoch "+string(epB)) || !strings.Contains(sc, "renew    slow_write") {
		t.Errorf("the renewal is not offered with its code and tools:\n%s", sc)
	}
	person.press("y")
	if rc := person.exit(); rc != "0" || !strings.Contains(person.screen(), "proof terminal") {
		t.Fatalf("one key on the renewal: exit %s\n%s", rc, person.screen())
	}
	recs := p.waitRecords("the renewal's approval_granted", func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID {
				return true
			}
		}
		return false
	})
	for _, a := range filterType(recs, audit.TypeApprovalGranted) {
		if a.Fields["renewal"] == r.ID && (a.Fields["proof"] != string(approval.ProofTerminal) || a.Epoch != string(epB)) {
			t.Errorf("approval_granted of the renewal: %+v, want proof terminal on epoch %s", a, epB)
		}
	}
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=2 revision=B") {
		t.Errorf("slow_write on the renewed grant: %q", got)
	}
	s.rpcError("publish_preview", map[string]any{"branch": "main"}, host.CodeAuthorizationRequired, "authorization_required:")
}

// TestRenewalOnePressOnPage: with an enrolled authenticator (proof
// presence), a grant approved on the page ends with a rebuild; mcpepoch
// approve --web, with no tools named, opens the renewal: the page shows it
// at the top with the renewal's own short code, and one press on
// "Approve renewal" (the authenticator's touch) makes the grant, proof
// presence, named in approval_granted as the renewal's.
func TestRenewalOnePressOnPage(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	enrollVirtualKey(t, ctx, p, env)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	first := startPageCLI(t, p, env, "approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write", "--credential", gStaging)
	if st := click(t, ctx, first.url, "approve"); st != "ok: Approved." {
		t.Fatalf("first approval page: %s", st)
	}
	first.wait(t)

	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B"})
	p.cli("record")
	epB, _ := p.epoch(s.run)
	r := p.review(s.run).Renewal
	if r == nil || r.Epoch != epB {
		t.Fatalf("renewal after the rebuild: %+v", r)
	}
	page := startPageCLI(t, p, env, "approve", "--web", "--no-open", "--run", s.run)
	// Its stderr is copied apart from the URL on stdout: the line may come
	// after the URL has been read.
	waitFor(t, waitLong, "approve --web to name the renewal "+r.ShortCode, func() bool {
		return strings.Contains(page.stderr.String(), "renewal "+r.ShortCode)
	})
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Navigate(page.url)); err != nil {
		t.Fatal(err)
	}
	tools, err := chromedp.Run(c, chromedp.Text("#renewal #renew-tools"))
	if err != nil {
		t.Fatalf("the page has no renewal at the top: %v", err)
	}
	code, err := chromedp.Run(c, chromedp.Text("#code"))
	if err != nil {
		t.Fatal(err)
	}
	if tools != "slow_write" || code != r.ShortCode {
		t.Errorf("renewal on the page: tools %q, code %q; want slow_write and %s", tools, code, r.ShortCode)
	}
	if st := click(t, ctx, page.url, "approve"); st != "ok: Approved." {
		t.Fatalf("one press on the renewal: %s", st)
	}
	if code := page.wait(t); code != 0 {
		t.Fatalf("approve --web: exit %d\n%s", code, page.stderr)
	}
	p.waitRecords("the renewal's approval_granted", func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID && a.Fields["proof"] == string(approval.ProofPresence) && a.Fields["signed_digest"] == r.ID {
				return true
			}
		}
		return false
	})
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "revision=B") {
		t.Errorf("slow_write on the renewed grant: %q", got)
	}
}

// TestRenewalDevPrompt: mcpepoch dev in a person's terminal rebuilds the
// server, which ends the grant approved before; dev shows the renewal and
// one key approves it with proof terminal. Run without a terminal, dev
// shows the next renewal with nothing to press and says where to approve.
func TestRenewalDevPrompt(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	p.approveAtTerminal(t, env, s.run)
	serverA := p.read("server.sh")
	term := p.devWindow(t, env)

	p.write("server.next", serverA+"# rebuilt once\n")
	term.waitScreen("y approve slow_write")
	r := p.review(s.run).Renewal
	if r == nil || !strings.Contains(term.screen(), "renewal "+r.ShortCode) {
		t.Fatalf("dev shows no renewal (host offers %+v):\n%s", r, term.screen())
	}
	// A call the renewal covers waits for it: dev's prompt asks, and no
	// line sends the person to mcpepoch approve for it.
	callWithoutGrant(t, s)
	time.Sleep(2*time.Second + 500*time.Millisecond) // a look of dev's at the host since
	if strings.Contains(term.screen(), "calls to slow_write wait for a person's approval") {
		t.Errorf("dev names a call its renewal covers as waiting for mcpepoch approve:\n%s", term.screen())
	}
	term.press("y")
	term.waitScreen("approved: grant")
	if !strings.Contains(term.screen(), "proof terminal") {
		t.Errorf("dev's approval:\n%s", term.screen())
	}
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Errorf("slow_write after dev's approval: %q", got)
	}
	if rv := p.review(s.run); rv.Renewal != nil {
		t.Errorf("the renewal is still offered after dev approved it: %+v", rv.Renewal)
	}
	term.quit()

	// No terminal: nothing to press, and where to approve.
	cmd := exec.Command(testenv.Mcpepoch(t), "dev", "--build", "cp server.next server.sh", "--watch", "server.next", "--debounce", "50ms")
	cmd.Dir, cmd.Env = p.dir, testenv.Environ(env...)
	var errb testenv.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.KillOnCleanup(t, cmd.Process.Pid)
	waitFor(t, waitLong, "dev without a terminal to build", func() bool { return strings.Contains(errb.String(), "build ok") })
	p.write("server.next", serverA+"# rebuilt twice\n")
	waitFor(t, waitLong, "dev without a terminal to show the renewal", func() bool {
		return strings.Contains(errb.String(), "a person must run mcpepoch approve in their own terminal (renewal ")
	})
	if strings.Contains(errb.String(), "y approve") {
		t.Errorf("dev without a terminal offers a key:\n%s", errb.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
}

// TestRenewalDevPromptNewTool: a rebuild adds a tool. dev's renewal prompt
// says plainly that its key does not approve the new tool and which
// command includes it; mcpepoch approve shows the tool as new, i and Enter
// include it, and the grant covers it.
func TestRenewalDevPromptNewTool(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	p.approveAtTerminal(t, env, s.run)
	serverA := p.read("server.sh")
	p.serverWithCounter(map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha"})
	serverB := p.read("server.sh")
	p.write("server.sh", serverA)
	term := p.devWindow(t, env)

	p.write("server.next", serverB)
	term.waitScreen("y approve slow_write")
	term.waitScreen("(not included: alpha (new); mcpepoch approve includes them)")
	term.press("n")
	term.waitScreen("not approved")

	appr := p.startTerminal(t, env, true, "approve", "$MCPEPOCH_BIN approve --run "+s.run)
	appr.waitScreen("i include new tools")
	if sc := appr.screen(); !strings.Contains(sc, "alpha") || !strings.Contains(sc, "not included: new since the last approval") {
		t.Errorf("approve does not show the new tool:\n%s", sc)
	}
	appr.press("i")
	appr.waitScreen("new tools to include (comma-separated) [")
	appr.press("\n")
	appr.waitScreen("approve tools alpha, slow_write with")
	appr.press("y")
	if rc := appr.exit(); rc != "0" {
		t.Fatalf("approve: exit %s\n%s", rc, appr.screen())
	}
	s.list()
	if _, err := s.call("alpha", nil); err != nil {
		t.Errorf("alpha after the renewal included it: %v", err)
	}
	term.quit()
}

// TestDevShowsServerCrash: the server crashes between builds. The dev
// window, which started no build, says so: the epoch that ended with its
// grants and the one crash recovery started; then it offers the renewal,
// and its key approves it.
func TestDevShowsServerCrash(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	p.approveAtTerminal(t, env, s.run)
	term := p.devWindow(t, env)
	before := p.status().Execution
	time.Sleep(3 * time.Second) // a look of dev's at the hosts as they run (every 2 s)
	if err := syscall.Kill(before.ProcessID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	term.waitScreen("the server crashed: epoch " + string(before.Epoch) + " ended, and every grant made for it; crash recovery started epoch ")
	term.waitScreen("whose 1 grant ended with it")
	term.waitScreen("y approve slow_write")
	term.press("y")
	term.waitScreen("approved: grant")
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Errorf("slow_write after dev's approval of the renewal: %q", got)
	}
	term.quit()
}

// TestRenewalDevPromptWithdrawnWhenApprovedElsewhere: dev asks a key for
// a renewal; the person approves it with mcpepoch approve in another
// terminal. dev notices and says the renewal is no longer offered: its
// key is not asked for any more.
func TestRenewalDevPromptWithdrawnWhenApprovedElsewhere(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	p.approveAtTerminal(t, env, s.run)
	serverA := p.read("server.sh")
	term := p.devWindow(t, env)
	p.write("server.next", serverA+"# rebuilt once\n")
	term.waitScreen("y approve slow_write")
	r := p.review(s.run).Renewal
	if r == nil {
		t.Fatalf("the host offers no renewal:\n%s", term.screen())
	}

	other := p.startTerminal(t, env, true, "other", "$MCPEPOCH_BIN approve --run "+s.run)
	other.waitScreen("y approve slow_write")
	other.press("y")
	if rc := other.exit(); rc != "0" {
		t.Fatalf("approve in the other terminal: exit %s\n%s", rc, other.screen())
	}
	term.waitScreen("renewal " + r.ShortCode + " of agent run " + s.run + " is no longer offered (approved elsewhere")
	term.quit()
}

// TestRenewalIncludeChangedTool: a changed tool joins the renewal only
// when the person asks: i, then its name or Enter (the default, shown in
// brackets: every changed tool), then a yes. (The project counts
// same-user, so the test's own terminal may approve.)
func TestRenewalIncludeChangedTool(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	for name, answer := range map[string]string{"named": "alpha\n", "default": "\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			renewalIncludeChangedTool(t, answer)
		})
	}
}

func renewalIncludeChangedTool(t *testing.T, answer string) {
	p := newGrantsProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha"})
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	p.approve(s.run, "--tools", "slow_write,alpha", "--credential", gStaging)
	p.serverWithCounter(map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha", "FIXTURE_DESCRIPTION_BYTES": "80"})
	p.cli("record")
	p.epoch(s.run)
	r := p.review(s.run).Renewal
	if r == nil {
		t.Fatal("no renewal after the rebuild")
	}
	term := p.startTerminal(t, nil, false, "include", "$MCPEPOCH_BIN approve --run "+s.run)
	term.waitScreen("i include changed tools")
	if sc := term.screen(); !strings.Contains(sc, "not included: its definition changed") || !strings.Contains(sc, "description_changed") {
		t.Errorf("the changed tool is not shown as changed:\n%s", sc)
	}
	term.press("i")
	term.waitScreen("changed tools to include (comma-separated) [")
	if sc := term.screen(); !regexp.MustCompile(`changed tools to include \(comma-separated\) \[(\x1b\[[0-9;]*m)?alpha(\x1b\[[0-9;]*m)?\]: `).MatchString(sc) {
		t.Fatalf("the include prompt does not show its default:\n%q", sc)
	}
	term.press(answer)
	term.waitScreen("approve tools alpha, slow_write with")
	term.waitScreen("[y/N]")
	term.press("y")
	if rc := term.exit(); rc != "0" {
		t.Fatalf("approve: exit %s\n%s", rc, term.screen())
	}
	recs := p.waitRecords("the renewal's approval_granted", func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID {
				return true
			}
		}
		return false
	})
	for _, a := range filterType(recs, audit.TypeApprovalGranted) {
		if a.Fields["renewal"] == r.ID && !sameList(a.Fields["tool_scope"], "alpha", "slow_write") {
			t.Errorf("the renewal with alpha included granted %v", a.Fields["tool_scope"])
		}
	}
	s.list()
	if _, err := s.call("alpha", nil); err != nil {
		t.Errorf("alpha after it was included: %v", err)
	}
}

// TestDevShowsCallsWaitingForApproval: the first call of a session to a
// tool that needs a grant is refused for lack of one; the dev window says
// which tool waits and what a person runs to approve it.
func TestDevShowsCallsWaitingForApproval(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	term := p.devWindow(t, env)
	callWithoutGrant(t, s)
	term.waitScreen("calls to slow_write wait for a person's approval: run mcpepoch approve in a terminal of your own")
	term.quit()
}

// TestDevShowsCallsWaitingDuringItsBuild: a call that comes to wait
// while dev builds is named too. The look that follows a build learns the
// hosts without reporting what the build's record reported already
// (restarts), but record does not report calls waiting for approval.
func TestDevShowsCallsWaitingDuringItsBuild(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, s := connectedDefault(t)
	term := p.devWindowBuilding(t, env, "sleep 1; cp server.next server.sh")
	time.Sleep(2*time.Second + 500*time.Millisecond) // a look of dev's at the host since
	p.write("server.next", p.read("server.next"))    // a save: a build of the same code
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(term.screen(), "building") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("dev did not build after the save:\n%s", term.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
	callWithoutGrant(t, s)
	term.waitScreen("calls to slow_write wait for a person's approval: run mcpepoch approve in a terminal of your own")
	term.quit()
}

// TestDevShowsDrift: code the server was started from changes on disk and
// no build follows (the file dev watches is another). The host ends the
// epoch's grants; the dev window, which started no build, says what runs
// is not what is on disk, once, after two looks at the host.
func TestDevShowsDrift(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env, _ := connectedDefault(t)
	term := p.devWindow(t, env)
	time.Sleep(3 * time.Second) // the restart of dev's first build done, and a look of dev's at the host
	ep := p.status().Execution.Epoch
	p.write("server.sh", p.read("server.sh")+"# edited by hand\n")
	term.waitScreen("epoch " + string(ep) + ": running ≠ built: server.sh changed on disk")
	time.Sleep(4500 * time.Millisecond) // two more looks
	if n := strings.Count(term.screen(), "running ≠ built"); n != 1 {
		t.Errorf("the drift is said %d times, want once:\n%s", n, term.screen())
	}
	term.quit()
}

// connectedDefault is a project of newDefaultProofProject with a client
// connected through its host (s), its catalog listed and the host ready.
func connectedDefault(t *testing.T) (*project, []string, *gSession) {
	t.Helper()
	p, env := newDefaultProofProject(t)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	return p, env, s
}

// devWindow starts mcpepoch dev in a terminal of p's own, its build
// copying server.next (server.sh as it is now) over server.sh, and waits
// for its first build.
func (p *project) devWindow(t *testing.T, env []string) *terminal {
	t.Helper()
	return p.devWindowBuilding(t, env, "cp server.next server.sh")
}

// devWindowBuilding is devWindow whose build is the shell command build.
func (p *project) devWindowBuilding(t *testing.T, env []string, build string) *terminal {
	t.Helper()
	p.write("server.next", p.read("server.sh"))
	dev := "$MCPEPOCH_BIN dev --build '" + build + "' --watch server.next --debounce 50ms"
	term := p.startTerminal(t, env, true, "dev", dev)
	term.waitScreen("build ok")
	return term
}

// callWithoutGrant calls slow_write, which the session holds no grant
// for, and fails the test unless the host refuses it.
func callWithoutGrant(t *testing.T, s *gSession) {
	t.Helper()
	if _, err := s.call("slow_write", map[string]any{"key": "k"}); err == nil {
		t.Fatal("slow_write ran without a grant")
	}
}
