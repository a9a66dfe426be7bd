package host_test

// End-to-end tests of the credentials broker: a go-sdk client runs the
// mcpepoch binary as its server, the host runs host/testdata/credserver
// (which asks the broker during its tool calls, speaking the protocol
// itself), and approvals, revocations and rebuilds are real mcpepoch CLI
// processes.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/host"
)

// Secret values of the credential tests' sources. No file the product
// writes and nothing it prints may hold them.
const (
	cApiSecret   = "api-secret-7c1e0b5a"
	cEnvSecret   = "env-secret-49d2aa10"
	cVaultSecret = "vault-secret-e83f6d02"
)

// cProject is a project served by credserver, with its sources outside it.
type cProject struct {
	*project
	secrets string // the directory of the file and command sources
}

// newCredProject makes a credserver project at revision rev, whose
// mcpepoch.toml declares the scopes
//
//	api    file source, used by write_secret
//	envsrc env source CRED_TEST_ENV_SECRET, used by write_secret
//	vault  command source (counts its runs in secrets/vault.runs), write_secret
//	pay    command source, per call, used by pay
func newCredProject(t testing.TB, rev string) *cProject {
	t.Helper()
	p := &cProject{project: newProject(t, nil), secrets: t.TempDir()}
	copyFile(t, buildServer(t, "host/testdata/credserver"), p.path("bin/credserver"))
	p.secret("api.token", cApiSecret+"\n")
	p.secret("vault.token", cVaultSecret)
	p.secret("pay.token", "pay-secret-1")
	vault := fmt.Sprintf("echo run >> %s/vault.runs; cat %s/vault.token", p.secrets, p.secrets)
	p.write("mcpepoch.toml", fmt.Sprintf(`label = "cred-test"
command = ["sh", "./server.sh"]

[grants]
exempt = ["env", "ask_later"]
proof = ["same-user"]

[credentials.api]
tools = ["write_secret"]
file = %q

[credentials.envsrc]
tools = ["write_secret"]
env = "CRED_TEST_ENV_SECRET"

[credentials.vault]
tools = ["write_secret"]
command = ["sh", "-c", %q]

[credentials.pay]
tools = ["pay"]
per_call = true
command = ["cat", %q]
`, filepath.Join(p.secrets, "api.token"), vault, filepath.Join(p.secrets, "pay.token")))
	p.revision(rev)
	return p
}

// revision rewrites server.sh for revision rev, as a build would.
func (p *cProject) revision(rev string) {
	p.write("server.sh", "#!/bin/sh\nexport CRED_REV='"+rev+"'\nexec ./bin/credserver\n")
}

// secret writes a source file, mode 0600.
func (p *cProject) secret(name, value string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.secrets, name), []byte(value), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// cConnect starts the host with the env source's variable set.
func cConnect(t *testing.T, p *cProject) *gSession {
	t.Helper()
	return gConnect(t, p.project, "CRED_TEST_ENV_SECRET="+cEnvSecret)
}

// issued is the line credserver answers for a secret handed to it.
func issued(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "issued sha256:" + hex.EncodeToString(sum[:6])
}

// refused is the start of credserver's line for a refusal with code.
func refused(code string) string { return "refused " + code + ": " }

func wantAnswer(t *testing.T, got, want string) {
	t.Helper()
	if !strings.HasPrefix(got, want) {
		t.Errorf("broker answer %q, want %q…", got, want)
	}
}

// brokerEnv returns the broker's socket as the server sees it, the token
// of the call that asked (ended once it returns), and whether the env
// source's variable reached the server.
func brokerEnv(t *testing.T, s *gSession) (socket, token string, envSecret bool) {
	t.Helper()
	m := regexp.MustCompile(`^socket=(\S*) call=(\S*) env_secret=(yes|no)$`).FindStringSubmatch(s.text("env", nil))
	if m == nil {
		t.Fatal("env tool: unexpected answer")
	}
	return m[1], m[2], m[3] == "yes"
}

// askDirect asks the broker from the test process, which is not the
// server nor its descendant.
func askDirect(t *testing.T, socket, token, scope string) credwire.Answer {
	t.Helper()
	c, err := net.DialTimeout("unix", socket, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLong))
	b, _ := json.Marshal(credwire.Request{V: credwire.Version, Scope: scope, Call: token})
	c.Write(append(b, '\n'))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var a credwire.Answer
	if err := json.Unmarshal(line, &a); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

// wantNoSecrets fails when a secret value appears in the project's state
// directory, the host's stderr or the audit log as audit show prints it.
func wantNoSecrets(t *testing.T, p *cProject, s *gSession) {
	t.Helper()
	secrets := []string{cApiSecret, cEnvSecret, cVaultSecret, "pay-secret-"}
	filepath.WalkDir(p.path(".mcpepoch"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, v := range secrets {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds a secret value", path)
			}
		}
		return nil
	})
	for _, v := range secrets {
		if strings.Contains(s.stderr.String(), v) {
			t.Errorf("the host's stderr holds a secret value")
		}
		if strings.Contains(p.cli("audit", "show", "--json").Stdout, v) {
			t.Errorf("audit show holds a secret value")
		}
	}
}

func TestCredentialIssuedOnlyToAGrantedCallInFlight(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	socket, token, envSecret := brokerEnv(t, s)
	if envSecret {
		t.Error("the server inherited the env source's variable")
	}
	if fi, err := os.Stat(socket); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("broker socket %s: %v, %v; want a socket, mode 0600", socket, fi, err)
	}
	if len(token) < 32 {
		t.Errorf("token %q is short", token)
	}

	// Not dispatched without a grant: the broker is never asked.
	s.rpcError("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required")
	p.approve(s.run, "--tools", "write_secret,plain", "--credential", "api", "--credential", "envsrc", "--credential", "vault")
	wantAnswer(t, s.text("write_secret", nil), issued(cApiSecret))
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "envsrc"}), issued(cEnvSecret))
	wantAnswer(t, s.text("write_secret", map[string]any{"via": "child"}), issued(cApiSecret))
	// A command source runs once per grant.
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "vault", "times": 2}), issued(cVaultSecret)+"\n"+issued(cVaultSecret))
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "vault"}), issued(cVaultSecret))
	if b, _ := os.ReadFile(filepath.Join(p.secrets, "vault.runs")); string(b) != "run\n" {
		t.Errorf("the vault command ran %q, want once for the grant", b)
	}

	// Refusals: a granted tool that does not use the scope; an undeclared
	// scope; a process that is not the server; no call in flight.
	wantAnswer(t, s.text("plain", nil), refused(credwire.CodeScopeNotUsed))
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "pay"}), refused(credwire.CodeScopeNotUsed))
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "nope"}), refused(credwire.CodeUnknownScope))
	// The test process asks, with the right token, while a granted call
	// that uses the scope is in flight.
	var wg sync.WaitGroup
	calls := len(filterType(p.records(), audit.TypeToolCalled))
	release := filepath.Join(t.TempDir(), "release")
	wg.Go(func() { wantAnswer(t, s.text("write_secret", map[string]any{"wait_for": release}), issued(cApiSecret)) })
	p.waitRecords("the held call dispatched", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == calls+1
	})
	if a := askDirect(t, socket, token, "api"); a.Error == nil || a.Error.Code != credwire.CodeWrongProcess || a.Secret != "" {
		t.Errorf("the test process asked and got %v, want %s", a, credwire.CodeWrongProcess)
	}
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
	later := filepath.Join(t.TempDir(), "later")
	s.text("ask_later", map[string]any{"wait_ms": 500, "out": later})
	waitFor(t, waitLong, "the request outside any call", func() bool { b, _ := os.ReadFile(later); return len(b) > 0 })
	if b, _ := os.ReadFile(later); !strings.Contains(string(b), refused(credwire.CodeNotInCall)) {
		t.Errorf("asked outside any call: %q, want %s", b, credwire.CodeNotInCall)
	}

	recs := p.waitRecords("7 issued and 5 denied credential records", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeCredentialIssued)) == 7 && len(filterType(recs, audit.TypeCredentialDenied)) == 5
	})
	var reasons []string
	for _, r := range filterType(recs, audit.TypeCredentialDenied) {
		reasons = append(reasons, fmt.Sprint(r.Fields["reason"]))
	}
	if got := strings.Join(reasons, ","); got != "scope_not_used,scope_not_used,unknown_scope,wrong_process,not_in_call" {
		t.Errorf("credential_denied reasons %s", got)
	}
	for _, r := range filterType(recs, audit.TypeCredentialIssued) {
		if r.Fields["scope"] == nil || r.Fields["call"] == nil || r.Fields["grant"] == nil || r.Fields[audit.FieldTool] != "write_secret" || r.Epoch == "" {
			t.Errorf("credential_issued lacks scope, call, grant, tool or epoch: %+v", r)
		}
	}
	wantNoSecrets(t, p, s)
}

func TestCredentialRefusedOnceTheGrantEnds(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)

	// Revoked while the call runs: the request that follows is refused.
	id, _, _ := p.approve(s.run, "--tools", "write_secret", "--credential", "api", "--credential", "envsrc", "--credential", "vault")
	var (
		wg     sync.WaitGroup
		answer string
	)
	release := filepath.Join(t.TempDir(), "release")
	wg.Go(func() { answer = s.text("write_secret", map[string]any{"wait_for": release}) })
	p.waitRecords("the call dispatched", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == 1
	})
	p.cli("revoke", id)
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
	wantAnswer(t, answer, refused(credwire.CodeGrantRevoked))

	// Expired while the call runs.
	id, _, _ = p.approve(s.run, "--tools", "write_secret", "--credential", "api", "--credential", "envsrc", "--credential", "vault", "--expires", "5s")
	expires := p.grant(id).ExpiresAt
	release = filepath.Join(t.TempDir(), "release")
	wg.Go(func() { answer = s.text("write_secret", map[string]any{"wait_for": release}) })
	p.waitRecords("the second call dispatched", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == 2
	})
	time.Sleep(time.Until(expires.Add(100 * time.Millisecond)))
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
	wantAnswer(t, answer, refused(credwire.CodeGrantExpired))
	wantNoSecrets(t, p, s)
}

func TestCredentialPerCallIsUsedOnce(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	p.approve(s.run, "--tools", "pay", "--credential", "pay", "--expires", "per-call")
	wantAnswer(t, s.text("pay", map[string]any{"scope": "pay", "times": 2}), issued("pay-secret-1")+"\n"+refused(credwire.CodePerCallUsed))
	s.rpcError("pay", map[string]any{"scope": "pay"}, host.CodeAuthorizationRequired, "authorization_required")
	// Nothing is kept: the next approval reads the source again.
	p.secret("pay.token", "pay-secret-2")
	p.approve(s.run, "--tools", "pay", "--credential", "pay", "--expires", "per-call")
	wantAnswer(t, s.text("pay", map[string]any{"scope": "pay"}), issued("pay-secret-2"))
	recs := p.waitRecords("a per_call_used refusal", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeCredentialDenied)) == 1 && len(filterType(recs, audit.TypeCredentialIssued)) == 2
	})
	if r := filterType(recs, audit.TypeCredentialDenied)[0]; r.Fields["reason"] != credwire.CodePerCallUsed || r.Fields["scope"] != "pay" {
		t.Errorf("credential_denied %+v", r.Fields)
	}
	wantNoSecrets(t, p, s)
}

// TestCredentialFollowsTheEpochAcrossARebuild is the seed's rebuild test
// with a credential-bearing write tool: revision A writes with the secret;
// after the rebuild the prepared call is refused before any secret is
// handed over, and a call token of the old epoch is worthless; after a new
// approval revision B gets the secret.
func TestCredentialFollowsTheEpochAcrossARebuild(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	written := filepath.Join(t.TempDir(), "written")
	creds := []string{"--credential", "api", "--credential", "envsrc", "--credential", "vault"}
	_, epA, _ := p.approve(s.run, append([]string{"--tools", "write_secret"}, creds...)...)
	wantAnswer(t, s.text("write_secret", map[string]any{"out": written}), issued(cApiSecret))
	socketA, tokenA, _ := brokerEnv(t, s)

	p.revision("B")
	p.record()
	epB, _ := p.epoch(s.run)
	if epB == epA {
		t.Fatalf("the rebuild kept epoch %s", epA)
	}
	data := s.rpcError("write_secret", map[string]any{"out": written}, host.CodeAuthorizationStale, "authorization_stale")
	if data["approvedEpoch"] != string(epA) || data["currentEpoch"] != string(epB) {
		t.Errorf("authorization_stale data %v, want approved %s, current %s", data, epA, epB)
	}
	if _, err := net.DialTimeout("unix", socketA, time.Second); err == nil {
		t.Errorf("epoch A's broker socket %s still answers", socketA)
	}
	p.approve(s.run, append([]string{"--tools", "write_secret"}, creds...)...)
	wantAnswer(t, s.text("write_secret", map[string]any{"call": tokenA}), refused(credwire.CodeNotInCall))
	wantAnswer(t, s.text("write_secret", map[string]any{"out": written}), issued(cApiSecret))

	b, _ := os.ReadFile(written)
	if want := "rev=A " + issued(cApiSecret) + "\nrev=B " + issued(cApiSecret) + "\n"; string(b) != want {
		t.Errorf("the write tool wrote %q, want %q", b, want)
	}
	recs := p.waitRecords("the credential records of both epochs", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeCredentialIssued)) == 2 && len(filterType(recs, audit.TypeCredentialDenied)) == 1
	})
	is := filterType(recs, audit.TypeCredentialIssued)
	if is[0].Epoch != string(epA) || is[1].Epoch != string(epB) {
		t.Errorf("credential_issued epochs %s, %s; want %s, %s", is[0].Epoch, is[1].Epoch, epA, epB)
	}
	if d := filterType(recs, audit.TypeCredentialDenied)[0]; d.Epoch != string(epB) || d.Fields["reason"] != credwire.CodeNotInCall {
		t.Errorf("credential_denied %s %v, want epoch %s, not_in_call", d.Epoch, d.Fields, epB)
	}
	wantNoSecrets(t, p, s)
}

// TestCredentialBoundToItsCall: a scoped call (write_secret, granted api)
// waits in the server; meanwhile a call the grant covers but whose tool
// does not use the scope (plain) asks for api, from a child process of the
// server. The broker knows which call asks by the token in that call's
// _meta: plain is refused, and audited as plain's, and write_secret gets
// the secret, audited as its own.
func TestCredentialBoundToItsCall(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	p.approve(s.run, "--tools", "write_secret,plain", "--credential", "api", "--credential", "envsrc", "--credential", "vault")

	calls := len(filterType(p.records(), audit.TypeToolCalled))
	release := filepath.Join(t.TempDir(), "release")
	var scoped string
	var wg sync.WaitGroup
	wg.Go(func() { scoped = s.text("write_secret", map[string]any{"wait_for": release}) })
	p.waitRecords("the scoped call in flight", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == calls+1
	})
	wantAnswer(t, s.text("plain", map[string]any{"via": "child"}), refused(credwire.CodeScopeNotUsed))
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
	wantAnswer(t, scoped, issued(cApiSecret))

	recs := p.waitRecords("one issued and one denied", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeCredentialIssued)) == 1 && len(filterType(recs, audit.TypeCredentialDenied)) == 1
	})
	ids := map[string]string{} // tool → the call id its credential record names
	for _, r := range append(filterType(recs, audit.TypeCredentialIssued), filterType(recs, audit.TypeCredentialDenied)...) {
		ids[fmt.Sprint(r.Fields[audit.FieldTool])] = fmt.Sprint(r.Fields["call"])
	}
	if d := filterType(recs, audit.TypeCredentialDenied)[0]; d.Fields[audit.FieldTool] != "plain" || d.Fields["reason"] != credwire.CodeScopeNotUsed || d.Fields["call"] == nil {
		t.Errorf("credential_denied %v, want plain's call, scope_not_used", d.Fields)
	}
	if i := filterType(recs, audit.TypeCredentialIssued)[0]; i.Fields[audit.FieldTool] != "write_secret" || i.Fields["scope"] != "api" {
		t.Errorf("credential_issued %v, want write_secret's call", i.Fields)
	}
	if ids["plain"] == ids["write_secret"] {
		t.Errorf("both credential records name call %s", ids["plain"])
	}

	// A token the client puts in _meta is replaced by the host's own.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Meta: mcp.Meta{credwire.MetaKey: "chosen-by-the-client"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := gText(res); strings.Contains(got, "chosen-by-the-client") || !regexp.MustCompile(`call=[0-9a-f]{64} `).MatchString(got) {
		t.Errorf("the server saw %q, want the host's own call token", got)
	}
	wantNoSecrets(t, p, s)
}
