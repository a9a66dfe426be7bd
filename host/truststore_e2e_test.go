package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestHandAppendedAuthenticatorRefused: the person's key is enrolled; a
// program appends its own FIDO-typed key to authenticators.json by hand,
// naming the person's key as the one that added it. mcpepoch
// authenticators shows it unconfirmed and fails, the file is kept as is,
// and a host started afterwards counts no presence by it.
func TestHandAppendedAuthenticatorRefused(t *testing.T) {
	t.Parallel()
	p, env := newDefaultProofProject(t)
	dir := filepath.Join(p.dir, "config", "mcpepoch")
	store, err := trust.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	person, _ := trust.NewSSH(softkey.NewSSHEd25519().AuthorizedKey("person"), "person", time.Now())
	c, err := store.Propose(trust.OpAdd, person)
	if err == nil {
		err = store.Apply(c, nil)
	}
	if err != nil {
		t.Fatal(err)
	}

	// The edit: a copy of the person's entry with the agent's key.
	agentKey := softkey.NewSSHEd25519()
	agent, _ := trust.NewSSH(agentKey.AuthorizedKey("agent"), "agent", time.Now())
	var f map[string]any
	b, _ := os.ReadFile(store.Path())
	json.Unmarshal(b, &f)
	list := f["authenticators"].([]any)
	e := map[string]any{}
	for k, v := range list[0].(map[string]any) {
		e[k] = v
	}
	e["id"], e["name"], e["addedBy"], e["ssh"] = agent.ID, "agent", person.ID, map[string]any{"authorizedKey": agent.SSH.AuthorizedKey}
	f["authenticators"] = append(list, e)
	edited, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(store.Path(), edited, 0o600); err != nil {
		t.Fatal(err)
	}

	out, code := p.runCLI(env, "authenticators")
	if code == 0 || !strings.Contains(out.Stdout, "UNCONFIRMED") || !strings.Contains(out.Stderr, "tampered") ||
		!strings.Contains(out.Stderr, store.Path()) || !strings.Contains(out.Stderr, "authenticators[1] ("+agent.ID+")") {
		t.Fatalf("mcpepoch authenticators over a hand-edited store: exit %d\n%s", code, out)
	}
	if strings.Contains(out.Stdout, "confirmed by "+person.ID) {
		t.Fatalf("the hand-appended key is listed as confirmed:\n%s", out)
	}

	s := gConnect(t, p, env...)
	s.list()
	st := p.ready(s.run)
	ndir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(ndir, s.run+notify.SocketSuffix)
	send := func(typ string, v any) (notify.Response, error) {
		b, _ := json.Marshal(v)
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		return notify.Send(ctx, sock, notify.Request{Type: typ, Payload: b})
	}
	resp, err := send(localapi.TypeProposeSSH, localapi.ApproveRequest{Epoch: st.Execution.Epoch, Tools: []string{"slow_write"}, Credentials: []string{gStaging}})
	var re *notify.RemoteError
	if err == nil {
		w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
		d, _ := grant.ParseDigest(w.Digest)
		_, err = send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(), Signature: string(agentKey.SSHSIG(sshsig.GrantNamespace, d[:], softkey.FlagUserPresent, 1))})
	}
	if !errors.As(err, &re) {
		t.Fatalf("an approval signed by the hand-appended key: %v, want a refusal", err)
	}
	if _, err := s.call("slow_write", map[string]any{"key": "k"}); err == nil || !strings.Contains(err.Error(), "authorization_required") {
		t.Fatalf("slow_write after the forged approval: %v, want authorization_required", err)
	}
	s.close()
	if back, _ := os.ReadFile(store.Path()); string(back) != string(edited) {
		t.Fatal("the tampered store was rewritten")
	}
}

// TestAgentCannotEnrollTheFirstAuthenticator: with nothing enrolled and
// proof = ["presence"], a program enrolls a software key presented as an
// sk-ssh-ed25519 FIDO key and signs with a fake ssh-keygen on PATH. The
// enrollment is refused without a terminal and from a faked terminal
// started by the MCP client, so the approval proves nothing and the call
// stays refused; a person's own terminal session may enroll it.
func TestAgentCannotEnrollTheFirstAuthenticator(t *testing.T) {
	needTerminalTools(t)
	t.Parallel()
	p, env := newDefaultProofProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "[grants]\n", "[grants]\nproof = [\"presence\"]\n", 1))
	fake := filepath.Join(p.dir, "fakebin")
	os.MkdirAll(fake, 0o755)
	if err := os.Symlink(buildServer(t, "host/testdata/fakesshkeygen"), filepath.Join(fake, "ssh-keygen")); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+fake+":"+os.Getenv("PATH"))
	if out, code := p.shell(env, "ssh-keygen gen softkey"); code != 0 {
		t.Fatalf("fake ssh-keygen gen: %d\n%s", code, out)
	}
	store := filepath.Join(p.dir, "config", "mcpepoch", trust.FileName)

	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)

	out, code := p.shell(env, `"$MCPEPOCH_BIN" enroll --ssh softkey.pub --name agent`)
	if code == 0 || !strings.Contains(out.Stderr, "no controlling terminal") {
		t.Fatalf("enroll with no terminal: exit %d\n%s", code, out)
	}
	out, code = p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN enroll --ssh softkey.pub --name agent" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "descends from the MCP client that launched an mcpepoch host") {
		t.Fatalf("enroll through script -qc: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("trust store after refused enrollments: %v, want none", err)
	}
	out, code = p.shell(env, `"$MCPEPOCH_BIN" approve --all --ssh softkey`)
	if code == 0 {
		t.Fatalf("approve --ssh with the fake ssh-keygen: exit 0\n%s", out)
	}
	if _, err := s.call("slow_write", map[string]any{"key": "k"}); err == nil || !strings.Contains(err.Error(), "authorization_required") {
		t.Fatalf("slow_write after the agent's approval: %v, want authorization_required", err)
	}

	// A person: a terminal session that does not descend from the client,
	// answering the question once it is on the screen.
	person := p.startTerminal(t, env, true, "person", "$MCPEPOCH_BIN enroll --ssh softkey.pub --name person")
	person.waitScreen("as the root of the trust store? [y/N]")
	person.press("y\n")
	if rc := person.exit(); rc != "0" {
		t.Fatalf("enrollment from a session of its own: exit %s\n%s", rc, person.screen())
	}
	if _, err := os.Stat(store); err != nil {
		t.Fatalf("trust store after the person's enrollment: %v", err)
	}
}

// TestFirstWebEnrollmentNeedsAPerson: the first enroll --web is behind the
// same person guard as the first enroll --ssh. With nothing enrolled and a
// host running, a program without a terminal, and one faking a terminal
// under the MCP client, get no registration page, so no headless browser
// can make itself the root; a terminal session of its own is asked [y/N]
// and its registration becomes the root, marked as enrolled at a terminal.
func TestFirstWebEnrollmentNeedsAPerson(t *testing.T) {
	needTerminalTools(t)
	testenv.Need(t, "timeout", testenv.InstallCoreutils)
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	dir := filepath.Join(p.dir, "config", "mcpepoch")
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)

	out, code := p.shell(env, `"$MCPEPOCH_BIN" enroll --web --no-open --name agent`)
	if code == 0 || !strings.Contains(out.Stderr, "no controlling terminal") || strings.Contains(out.Stdout, "http://") {
		t.Fatalf("enroll --web with no terminal: exit %d\n%s", code, out)
	}
	out, code = p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN enroll --web --no-open --name agent" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "descends from the MCP client that launched an mcpepoch host") || strings.Contains(out.Combined, "http://") {
		t.Fatalf("enroll --web through script -qc: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, trust.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("trust store after refused enrollments: %v, want none", err)
	}

	// A person: a terminal session that does not descend from the client,
	// answering the question once it is on the screen. timeout bounds it so
	// that nothing outlives the test; --foreground keeps enroll in the
	// terminal's foreground process group, where a person's command runs
	// (in a group of timeout's own, its read of the terminal would stop it:
	// SIGTTIN).
	person := p.startTerminal(t, env, true, "person", "timeout --foreground 120 $MCPEPOCH_BIN enroll --web --no-open --name person")
	person.waitScreen("becomes the root of the trust store")
	person.waitScreen("[y/N]")
	if strings.Contains(person.screen(), "http://") {
		t.Fatalf("the registration page before the answer:\n%s", person.screen())
	}
	person.press("y\n")
	url := person.waitMatch(pageURLRe)[0]
	if st := click(t, ctx, url, "register"); !strings.HasPrefix(st, "ok:") {
		t.Fatalf("registration page: %s\n%s", st, person.screen())
	}
	if rc := person.exit(); rc != "0" {
		t.Fatalf("enrollment from a session of its own: exit %s\n%s", rc, person.screen())
	}
	st, err := trust.Open(dir)
	if err != nil || st.Root() == nil || st.Root().Name != "person" || st.Root().Enrolled != trust.EnrolledTerminal {
		t.Fatalf("trust store after the person's enrollment: %+v %v", st, err)
	}
}

// TestInterruptAtTheRootQuestion: the first enrollment's [y/N] question
// at a person's terminal ends at once, enrolling nothing, on Ctrl-C and on
// SIGTERM (here timeout's), not only on a typed line.
func TestInterruptAtTheRootQuestion(t *testing.T) {
	needTerminalTools(t)
	testenv.Need(t, "timeout", testenv.InstallCoreutils)
	t.Parallel()
	p, env := newDefaultProofProject(t)
	enroll := "$MCPEPOCH_BIN enroll --web --no-open --name person"
	ctrlC := p.startTerminal(t, env, true, "ctrl-c", "timeout --foreground 120 "+enroll)
	ctrlC.waitScreen("[y/N]")
	ctrlC.press("\x03") // the keyboard stays open: Ctrl-C alone ends it
	if rc := ctrlC.exitUnclosed(); rc == "0" || !strings.Contains(ctrlC.screen(), "not enrolled: interrupted before an answer") {
		t.Fatalf("Ctrl-C at the question: exit %s\n%s", rc, ctrlC.screen())
	}
	// SIGTERM comes after 2 s: at the question on most runs, earlier on a
	// slow one; either way enroll ends and timeout says so (124).
	term := p.startTerminal(t, env, true, "sigterm", "timeout --foreground 2 "+enroll)
	if rc := term.exitUnclosed(); rc != "124" {
		t.Fatalf("SIGTERM at the question: exit %s, want 124 (timed out)\n%s", rc, term.screen())
	}
	if sc := term.screen(); strings.Contains(sc, "[y/N]") && !strings.Contains(sc, "interrupted before an answer") {
		t.Fatalf("SIGTERM at the question:\n%s", sc)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "config", "mcpepoch", trust.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("trust store after interrupted enrollments: %v, want none", err)
	}
}

// TestHostAuditsPinnedRoot: a host audits the store it pins at start
// (trust_pinned: digest, entries, the root, how it was enrolled, attested
// or not), and mcpepoch authenticators marks the root and warns that it is
// unattested.
func TestHostAuditsPinnedRoot(t *testing.T) {
	t.Parallel()
	p, env := newDefaultProofProject(t)
	root, _ := trust.NewSSH(softkey.NewSSHEd25519().AuthorizedKey("person"), "person", time.Now())
	root.Enrolled = trust.EnrolledTerminal
	store := p.enroll(root)
	s := gConnect(t, p, env...)
	s.list()
	recs := p.waitRecords("a trust_pinned record", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeTrustPinned)) > 0 })
	f := filterType(recs, audit.TypeTrustPinned)[0].Fields
	r, _ := f["root"].(map[string]any)
	if f["store_digest"] != store.Digest() || fmt.Sprint(f["entries"]) != "1" || r["id"] != root.ID || r["enrolled"] != "terminal" || r["attested"] != false {
		t.Fatalf("trust_pinned %v, want digest %s, 1 entry, root %s enrolled at a terminal, unattested", f, store.Digest(), root.ID)
	}
	out, code := p.runCLI(env, "authenticators")
	if code != 0 || !strings.Contains(out.Stdout, "ROOT: first, trusted on first use, enrolled at a terminal") ||
		!strings.Contains(out.Stdout, "unattested (no attestation)") || !strings.Contains(out.Stderr, trust.UnattestedWarning) {
		t.Fatalf("authenticators: exit %d\n%s", code, out)
	}
}
