package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/credwire"
)

// TestCredentialWaitsForItsRecord: no secret without its record. While
// another writer holds the audit log's lock, a granted call's request
// for a secret is refused unavailable instead of answered with the
// credential_issued record only queued; once the lock is free, the log
// holds the refusal and no credential_issued for that request.
func TestCredentialWaitsForItsRecord(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	p.approve(s.run, "--tools", "write_secret", "--credential", "api", "--credential", "envsrc", "--credential", "vault")
	wantAnswer(t, s.text("write_secret", nil), issued(cApiSecret))

	release := filepath.Join(t.TempDir(), "release")
	answer := make(chan string, 1)
	go func() { answer <- s.text("write_secret", map[string]any{"wait_for": release}) }()
	p.waitRecords("the held call dispatched", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == 2
	})
	lk, err := os.OpenFile(filepath.Join(p.dir, ".mcpepoch", "audit.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(release, nil, 0o600)
	got := <-answer
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	wantAnswer(t, got, refused(credwire.CodeUnavailable))
	if !strings.Contains(got, "no secret is handed out without its record") {
		t.Errorf("refusal %q does not say why", got)
	}
	recs := p.waitRecords("the refusal recorded", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeCredentialDenied)) == 1
	})
	if d := filterType(recs, audit.TypeCredentialDenied)[0]; d.Fields["reason"] != credwire.CodeUnavailable {
		t.Errorf("credential_denied %+v, want reason %s", d.Fields, credwire.CodeUnavailable)
	}
	if n := len(filterType(recs, audit.TypeCredentialIssued)); n != 1 {
		t.Errorf("%d credential_issued records, want 1: the first call's only", n)
	}
	wantNoSecrets(t, p, s)
}
