package trust

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func webauthnAuth(t *testing.T, name string) Authenticator {
	t.Helper()
	a, _ := webauthnKey(t, name)
	return a
}

func webauthnKey(t *testing.T, name string) (Authenticator, *softkey.WebAuthnKey) {
	t.Helper()
	k := softkey.NewWebAuthn()
	a, err := NewWebAuthn(WebAuthnCredential{CredentialID: k.CredentialID, PublicKey: k.COSEKey(), AAGUID: k.AAGUID, AttestationType: "none"}, name, t0)
	if err != nil {
		t.Fatal(err)
	}
	return a, k
}

// signChange returns k's presence over c's challenge with counter n, as
// the ceremony reports a verified assertion.
func signChange(k *softkey.WebAuthnKey, id string, c *Change, n uint32) *Presence {
	ad, cd, sig := k.RawAssertion("http://localhost:4321", "localhost", c.Requirement.Challenge[:], softkey.FlagUserPresent, n)
	return &Presence{AuthenticatorID: id, Challenge: c.Requirement.Challenge, SignCount: n,
		Assertion: &Assertion{AuthenticatorData: ad, ClientDataJSON: cd, Signature: sig}}
}

func sshAuth(t *testing.T) Authenticator {
	t.Helper()
	a, err := NewSSH(softkey.NewSSHEd25519().AuthorizedKey("me@laptop"), "", t0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// storeDir returns a fresh store directory under a private home.
func storeDir(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	return filepath.Join(home, ".config", "mcpepoch")
}

func enrollFirst(t *testing.T, dir string, a Authenticator) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Propose(OpAdd, a)
	if err != nil {
		t.Fatal(err)
	}
	if c.Requirement.Presence {
		t.Fatal("the first authenticator needs no presence signature, got a requirement")
	}
	if err := s.Apply(c, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultDirHonoursXDGConfigHome(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("XDG_CONFIG_HOME is a Linux convention; os.UserConfigDir ignores it on %s", runtime.GOOS)
	}
	x := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", x)
	d, err := DefaultDir()
	if want := filepath.Join(x, "mcpepoch"); err != nil || d != want {
		t.Fatalf("DefaultDir = %s, %v; want %s", d, err, want)
	}
}

// TestOwnerChecked: a store file, directory or parent of another user is
// refused. Changing an owner takes root.
func TestOwnerChecked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root; this test runs as uid", os.Geteuid())
	}
	dir := storeDir(t)
	s := enrollFirst(t, dir, webauthnAuth(t, "a"))
	for _, p := range []string{s.Path(), dir, filepath.Dir(dir)} {
		os.Chown(p, 4242, -1)
		_, err := Open(dir)
		var pe *PermissionError
		if !errors.As(err, &pe) || pe.Path != p || !strings.Contains(err.Error(), "uid 4242") {
			t.Errorf("%s owned by uid 4242: Open = %v", p, err)
		}
		os.Chown(p, 0, -1)
	}
}

func TestFirstEnrollmentThenSignedChanges(t *testing.T) {
	dir := storeDir(t)
	first, key := webauthnKey(t, "YubiKey")
	s := enrollFirst(t, dir, first)
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("store directory mode %v, want 0700", di.Mode().Perm())
	}

	second := sshAuth(t)
	c, err := s.Propose(OpAdd, second)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Requirement.Presence || len(c.Requirement.Signers) != 1 || c.Requirement.Signers[0].ID != first.ID {
		t.Fatalf("requirement %+v: want presence by %s", c.Requirement, first.ID)
	}
	if err := s.Apply(c, nil); !errors.Is(err, ErrPresenceRequired) {
		t.Fatalf("Apply without presence = %v, want ErrPresenceRequired", err)
	}
	wrong := &Presence{AuthenticatorID: first.ID, SignCount: 1}
	if err := s.Apply(c, wrong); !errors.Is(err, ErrPresenceRequired) {
		t.Fatalf("Apply with presence over another challenge = %v, want ErrPresenceRequired", err)
	}
	stranger := &Presence{AuthenticatorID: "not-enrolled", SignCount: 1, Challenge: c.Requirement.Challenge}
	if err := s.Apply(c, stranger); !errors.Is(err, ErrPresenceRequired) {
		t.Fatalf("Apply signed by an unenrolled authenticator = %v, want ErrPresenceRequired", err)
	}
	noEvidence := &Presence{AuthenticatorID: first.ID, SignCount: 5, Challenge: c.Requirement.Challenge}
	if err := s.Apply(c, noEvidence); !errors.Is(err, ErrPresenceRequired) {
		t.Fatalf("Apply of an addition without the assertion to keep = %v, want ErrPresenceRequired", err)
	}
	ok := signChange(key, first.ID, c, 5)
	if err := s.Apply(c, ok); err != nil {
		t.Fatal(err)
	}
	back, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, found := back.Lookup(second.ID)
	if !found || got.AddedBy != first.ID || got.Kind != KindSSH || got.Name != "me@laptop" {
		t.Fatalf("second authenticator = %+v, %v", got, found)
	}
	if f, _ := back.Lookup(first.ID); f.SignCount != 5 {
		t.Fatalf("signer's counter = %d, want 5", f.SignCount)
	}
	// The same signature cannot be used again: the store changed.
	if err := back.Apply(c, ok); !errors.Is(err, ErrStale) {
		t.Fatalf("second Apply of one change = %v, want ErrStale", err)
	}

	// The first confirmed the second: removing it would leave the second
	// unconfirmed.
	rm, err := back.Propose(OpRemove, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Apply(rm, &Presence{AuthenticatorID: first.ID, SignCount: 6, Challenge: rm.Requirement.Challenge}); err == nil || !strings.Contains(err.Error(), "remove that one first") {
		t.Fatalf("removal of a confirming authenticator = %v, want a refusal", err)
	}
	rm, err = back.Propose(OpRemove, second)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Apply(rm, &Presence{AuthenticatorID: first.ID, SignCount: 5, Challenge: rm.Requirement.Challenge}); !errors.Is(err, ErrCounter) {
		t.Fatalf("removal with a counter that did not grow = %v, want ErrCounter", err)
	}
	if err := back.Apply(rm, &Presence{AuthenticatorID: second.ID, Challenge: rm.Requirement.Challenge}); err != nil {
		t.Fatal(err)
	}
	if _, found := back.Lookup(second.ID); found || len(back.Authenticators) != 1 {
		t.Fatalf("after removal: %+v", back.Authenticators)
	}
}

// TestHandEditedEntryRefused: an entry written into the file by hand, with
// no confirmation, with another entry's confirmation, or changed after it
// was confirmed, makes the store tampered: named by file and entry,
// nothing trusted, the file kept as is.
func TestHandEditedEntryRefused(t *testing.T) {
	dir := storeDir(t)
	first, key := webauthnKey(t, "YubiKey")
	s := enrollFirst(t, dir, first)
	second := sshAuth(t)
	c, _ := s.Propose(OpAdd, second)
	if err := s.Apply(c, signChange(key, first.ID, c, 1)); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(s.Path())
	var f fileFormat
	if err := json.Unmarshal(good, &f); err != nil {
		t.Fatal(err)
	}
	agent := sshAuth(t)
	agent.Name = "agent"
	noConf := agent
	noConf.AddedBy = first.ID
	copied := agent
	copied.AddedBy, copied.Confirmation = first.ID, f.Authenticators[1].Confirmation
	renamed := f.Authenticators[1]
	renamed.Name = "renamed"
	for what, entries := range map[string][]Authenticator{
		"appended without confirmation":              {f.Authenticators[0], f.Authenticators[1], noConf},
		"appended with another entry's confirmation": {f.Authenticators[0], f.Authenticators[1], copied},
		"confirmed entry changed":                    {f.Authenticators[0], renamed},
		"confirmed by a later entry":                 {f.Authenticators[1], f.Authenticators[0]},
	} {
		b, _ := json.Marshal(fileFormat{V: 1, Authenticators: entries})
		os.WriteFile(s.Path(), b, 0o600)
		got, err := Open(dir)
		var te *TamperedError
		if !errors.As(err, &te) || te.Path != s.Path() || len(got.Unconfirmed) == 0 || !strings.Contains(err.Error(), "authenticators[") {
			t.Errorf("%s: Open = %v, want a TamperedError naming the file and entry", what, err)
			continue
		}
		if err := s.RecordUse(first.ID, 50); !errors.As(err, &te) {
			t.Errorf("%s: a write over a tampered store = %v, want TamperedError", what, err)
		}
		if back, _ := os.ReadFile(s.Path()); string(back) != string(b) {
			t.Errorf("%s: tampered file was changed", what)
		}
	}
	os.WriteFile(s.Path(), good, 0o600)
	if _, err := Open(dir); err != nil {
		t.Fatalf("restored store: %v", err)
	}
}

func TestStaleProposalRefused(t *testing.T) {
	dir := storeDir(t)
	s, _ := Open(dir)
	c1, _ := s.Propose(OpAdd, webauthnAuth(t, "a"))
	c2, _ := s.Propose(OpAdd, webauthnAuth(t, "b"))
	if err := s.Apply(c1, nil); err != nil {
		t.Fatal(err)
	}
	// c2 was proposed to an empty store; it is no longer empty, so it would
	// skip the presence signature it now needs.
	if err := s.Apply(c2, nil); !errors.Is(err, ErrStale) {
		t.Fatalf("Apply of a second first-enrollment = %v, want ErrStale", err)
	}
}

func TestDigestPinsWhatIsTrustedNotCounters(t *testing.T) {
	dir := storeDir(t)
	s, _ := Open(dir)
	empty := s.Digest()
	a := webauthnAuth(t, "a")
	s = enrollFirst(t, dir, a)
	pinned := s.Digest()
	if pinned == empty || !strings.HasPrefix(pinned, "sha256:") {
		t.Fatalf("digest after enrollment %s, empty %s", pinned, empty)
	}
	if err := s.RecordUse(a.ID, 9); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordUse(a.ID, 9); !errors.Is(err, ErrCounter) {
		t.Fatalf("replayed counter = %v, want ErrCounter", err)
	}
	back, _ := Open(dir)
	if back.Digest() != pinned {
		t.Fatal("using an authenticator changed the store's digest")
	}
	// Editing what is trusted by hand changes it.
	b, _ := os.ReadFile(back.Path())
	b = []byte(strings.Replace(string(b), `"name": "a"`, `"name": "b"`, 1))
	os.WriteFile(back.Path(), b, 0o600)
	edited, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Digest() == pinned {
		t.Fatal("a renamed authenticator kept the digest")
	}
}

func TestPlainSSHKeyRefused(t *testing.T) {
	signer, err := ssh.NewSignerFromKey(mustEd25519(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewSSH(ssh.MarshalAuthorizedKey(signer.PublicKey()), "plain", t0)
	if err == nil || !strings.Contains(err.Error(), "never proves presence") {
		t.Fatalf("plain ed25519 key: %v, want a refusal", err)
	}
	if _, err := NewSSH(softkey.NewSSHECDSA().AuthorizedKey("ec"), "", t0); err != nil {
		t.Fatalf("sk-ecdsa key refused: %v", err)
	}
}

func TestPermissionsCheckedOnEveryOpen(t *testing.T) {
	dir := storeDir(t)
	s := enrollFirst(t, dir, webauthnAuth(t, "a"))
	path := s.Path()
	for _, tc := range []struct {
		what string
		p    string
		mode os.FileMode
	}{
		{"file readable by group", path, 0o640},
		{"directory open to others", dir, 0o705},
		{"parent writable by group", filepath.Dir(dir), 0o770},
		{"home writable by others", filepath.Dir(filepath.Dir(dir)), 0o703},
	} {
		fi, _ := os.Stat(tc.p)
		os.Chmod(tc.p, tc.mode)
		_, err := Open(dir)
		var pe *PermissionError
		if !errors.As(err, &pe) || pe.Path != tc.p {
			t.Errorf("%s: Open = %v, want a PermissionError naming %s", tc.what, err, tc.p)
		}
		if err := s.RecordUse(s.Authenticators[0].ID, 0); !errors.As(err, &pe) {
			t.Errorf("%s: write = %v, want a PermissionError", tc.what, err)
		}
		os.Chmod(tc.p, fi.Mode().Perm())
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("restored modes: %v", err)
	}
	// A symlinked store file is refused.
	os.Rename(path, path+".real")
	os.Symlink(path+".real", path)
	if _, err := Open(dir); err == nil {
		t.Fatal("a symlinked store file was accepted")
	}
}

func TestCorruptStoreReportedAndKept(t *testing.T) {
	dir := storeDir(t)
	s := enrollFirst(t, dir, webauthnAuth(t, "a"))
	cases := map[string]string{
		"not JSON":                           `{"v":1,`,
		`"v" is 2`:                           `{"v":2,"authenticators":[]}`,
		"authenticators[0]: member \"kind\"": `{"v":1,"authenticators":[{"id":"x","name":"n","addedAt":"2026-12-01T08:00:00Z","kind":"pgp"}]}`,
		"authenticators[0]: member \"webauthn.publicKey\"": `{"v":1,"authenticators":[{"id":"eA","name":"n","addedAt":"2026-12-01T08:00:00Z","kind":"webauthn","webauthn":{"credentialId":"eA==","publicKey":"AAAA","aaguid":"AAAAAAAAAAAAAAAAAAAAAA=="}}]}`,
	}
	for want, content := range cases {
		os.WriteFile(s.Path(), []byte(content), 0o600)
		_, err := Open(dir)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != s.Path() || (want != "not JSON" && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: Open = %v", want, err)
		}
		if err := s.RecordUse(s.Authenticators[0].ID, 0); !errors.As(err, &ce) {
			t.Errorf("%s: a write over a corrupt store = %v, want CorruptError", want, err)
		}
		if b, _ := os.ReadFile(s.Path()); string(b) != content {
			t.Errorf("%s: corrupt file was changed", want)
		}
	}
}

// TestOneSignatureAcceptedOnce: stores opened separately (as by two hosts)
// racing to record the same counter: exactly one wins, because each write
// re-reads the store under the lock.
func TestOneSignatureAcceptedOnce(t *testing.T) {
	dir := storeDir(t)
	a := webauthnAuth(t, "a")
	enrollFirst(t, dir, a)
	const n = 8
	errs := make(chan error, n)
	for range n {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		go func() { errs <- s.RecordUse(a.ID, 7) }()
	}
	won := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrCounter):
			t.Errorf("RecordUse: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d stores accepted counter 7, want exactly 1", won, n)
	}
}
