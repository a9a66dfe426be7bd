package host_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestSSHPresenceApprovalIsASignedCheckpoint: an enrolled FIDO ssh key's
// signature over the grant digest makes the grant (proof presence); one
// without the user-presence flag is refused. audit verify checks the
// approval as a signed checkpoint: rewriting the log before it, with a
// new, intact hash chain, makes verify exit 5.
func TestSSHPresenceApprovalIsASignedCheckpoint(t *testing.T) {
	t.Parallel()
	p, env := newDefaultProofProject(t)
	key := softkey.NewSSHEd25519()
	a, err := trust.NewSSH(key.AuthorizedKey("test key"), "test key", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	store := p.enroll(a)

	s := gConnect(t, p, env...)
	s.list()
	st := p.ready(s.run)
	send := func(typ string, v any) (notify.Response, error) { return p.sendHost(s.run, typ, v) }
	propose := func() grant.Digest {
		resp, err := send(localapi.TypeProposeSSH, localapi.ApproveRequest{Epoch: st.Execution.Epoch, Tools: []string{"slow_write"}, Credentials: []string{gStaging}})
		if err != nil {
			t.Fatalf("propose_ssh: %v", err)
		}
		w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
		d, err := grant.ParseDigest(w.Digest)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	d := propose()
	_, err = send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(), Signature: string(key.SSHSIG(sshsig.GrantNamespace, d[:], 0, 1))})
	var re *notify.RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "presence") {
		t.Fatalf("a signature without the user-presence flag: %v", err)
	}
	d = propose()
	resp, err := send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(), Signature: string(key.SSHSIG(sshsig.GrantNamespace, d[:], softkey.FlagUserPresent, 2))})
	if err != nil {
		t.Fatalf("approve_ssh: %v", err)
	}
	g, _ := localapi.DecodePayload[grant.Grant](resp.Payload)
	if g.Proof != approval.ProofPresence || g.Channel != "ssh" || g.SignedDigest != d.String() || g.SignCount != 2 {
		t.Fatalf("grant %+v", g)
	}
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Fatalf("slow_write after the ssh approval: %q", got)
	}
	p.waitRecords("approval_granted", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalGranted)) == 1 })

	// The store replaced while the host runs (another key as a new
	// root): it is no longer the one pinned at start, and no presence
	// counts until the host restarts.
	other := softkey.NewSSHEd25519()
	b, _ := trust.NewSSH(other.AuthorizedKey("other"), "other", time.Now())
	kept, err := os.ReadFile(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(store.Path()); err != nil {
		t.Fatal(err)
	}
	fresh, err := trust.Open(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := fresh.Propose(trust.OpAdd, b)
	if err == nil {
		err = fresh.Apply(c2, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	d = propose()
	_, err = send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(), Signature: string(key.SSHSIG(sshsig.GrantNamespace, d[:], softkey.FlagUserPresent, 4))})
	if !errors.As(err, &re) || !strings.Contains(re.Message, "changed since the host started") {
		t.Fatalf("presence with a trust store changed while the host runs: %v", err)
	}
	p.waitRecords("trust_store_changed", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeTrustStoreChanged)) == 1 })
	s.close()
	if err := os.WriteFile(store.Path(), kept, 0o600); err != nil { // the person's store back, for audit verify
		t.Fatal(err)
	}

	if out, code := p.runCLI(env, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify of the untouched log: exit %d\n%s", code, out)
	}

	// Rewrite the first record and make the chain anew: the chain is
	// intact, the checkpoint is not.
	rewriteLog(t, p.dir, func(i int, r audit.Record) map[string]any {
		if i == 0 {
			return map[string]any{"label": "rewritten"}
		}
		return r.Fields
	})
	out, code := p.runCLI(env, "audit", "verify")
	if code != 5 || !strings.Contains(out.Stdout, "signed checkpoint") || !strings.Contains(out.Stdout, "rewritten") {
		t.Fatalf("audit verify of a log rewritten before a signed approval: exit %d, want 5\n%s", code, out)
	}
}

// rewriteLog rewrites the project's audit log at dir as someone who can
// write the project would: every record through edit (given its index and
// the record; it returns the fields to write), log_recovered records left
// out, with a new, intact hash chain and a head that names its end.
func rewriteLog(t *testing.T, dir string, edit func(i int, r audit.Record) map[string]any) {
	t.Helper()
	logPath := layout.Audit(dir)
	recs, err := audit.Read(logPath)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Type == audit.TypeLogRecovered {
			continue
		}
		if _, err := l.Append(audit.Event{Type: r.Type, Epoch: r.Epoch, Run: r.Run, Fields: edit(i, r), Time: r.Time}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, pair := range [][2]string{{tmp, logPath}, {audit.HeadPath(tmp), audit.HeadPath(logPath)}} {
		b, err := os.ReadFile(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pair[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPresenceApprovalWithoutCheckpoint: a presence approval always
// records the proposal it signed; its record stripped of those fields,
// with the chain made anew, is an error of audit verify (exit 5), not a
// record to skip.
func TestPresenceApprovalWithoutCheckpoint(t *testing.T) {
	t.Parallel()
	p, env := newDefaultProofProject(t)
	key := softkey.NewSSHEd25519()
	a, err := trust.NewSSH(key.AuthorizedKey("test key"), "test key", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.enroll(a)
	s := gConnect(t, p, env...)
	s.list()
	st := p.ready(s.run)
	resp, err := p.sendHost(s.run, localapi.TypeProposeSSH, localapi.ApproveRequest{Epoch: st.Execution.Epoch, Tools: []string{"slow_write"}, Credentials: []string{gStaging}})
	if err != nil {
		t.Fatalf("propose_ssh: %v", err)
	}
	w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
	d, err := grant.ParseDigest(w.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.sendHost(s.run, localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(),
		Signature: string(key.SSHSIG(sshsig.GrantNamespace, d[:], softkey.FlagUserPresent, 1))}); err != nil {
		t.Fatalf("approve_ssh: %v", err)
	}
	p.waitRecords("approval_granted", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalGranted)) == 1 })
	s.close()
	// The approval is a checkpoint kept outside the project too.
	if out, code := p.runCLI(env, "audit", "verify"); code != 0 || !strings.Contains(out.Stdout, "so do its 1 signed checkpoint") {
		t.Fatalf("audit verify of the untouched log: exit %d\n%s", code, out)
	}

	rewriteLog(t, p.dir, func(_ int, r audit.Record) map[string]any {
		if r.Type != audit.TypeApprovalGranted {
			return r.Fields
		}
		f := maps.Clone(r.Fields)
		for _, k := range []string{"audit_head_seq", "audit_head_hash", "nonce", "catalog_revision", "signature"} {
			delete(f, k)
		}
		return f
	})
	// Without the copy of the head kept outside the project (a log
	// written before hosts kept one, or a state directory removed), the
	// record itself must still fail.
	state, err := layout.ProjectState(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	out, code := p.runCLI(env, "audit", "verify")
	if code != 5 || !strings.Contains(out.Stdout, "no signed checkpoint") || !strings.Contains(out.Stdout, "audit_head_seq") {
		t.Fatalf("audit verify of a presence approval stripped of its checkpoint: exit %d, want 5\n%s", code, out)
	}
}
