// Package trust keeps the authenticators a person enrolled to prove their
// presence: WebAuthn credentials and FIDO ssh keys (sk-ssh-ed25519,
// sk-ecdsa-sha2-nistp256). It is the verifier's trust store, and so the real
// boundary of every presence-signed grant: a program that could add its own
// key here could approve itself.
//
// The store is one file, authenticators.json, in the user's config
// directory (DefaultDir: internal/userdirs, under the home directory the
// account database names, never one the environment names). Every Open
// and every write checks the file, its directory and each parent up to the
// home directory for owner and mode (CheckPath). Writes are atomic and serialised across processes by a lock
// file beside it. Adding or removing an authenticator takes a presence
// signature by one already enrolled, except for the first (Store.Propose).
// The store's Digest covers what is trusted, not the signature counters, so
// a host can pin it at start and notice any change while it runs.
//
// File shape, version 1 (byte strings are standard base64, as encoding/json
// writes []byte):
//
//	{"v": 1, "authenticators": [
//	  {"id": "AbC…", "kind": "webauthn", "name": "YubiKey 5", "addedAt": "2026-12-01T08:00:00Z",
//	   "addedBy": "", "signCount": 7,
//	   "webauthn": {"credentialId": "…", "publicKey": "…COSE_Key…", "aaguid": "…16 bytes…",
//	                "backupEligible": false, "attestationType": "none"}},
//	  {"id": "SHA256:…", "kind": "ssh", "name": "laptop key", "addedAt": "…", "addedBy": "AbC…",
//	   "signCount": 0, "ssh": {"authorizedKey": "sk-ssh-ed25519@openssh.com AAAA… comment"},
//	   "confirmation": {"by": "AbC…", "storeDigest": "sha256:…", "nonce": "…", "webauthn": {…}}}
//	]}
package trust

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/gowebpki/jcs"
	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
)

// FileName is the store's file inside its directory.
const FileName = "authenticators.json"

// maxStoreFile is the largest store Open reads, in bytes.
const maxStoreFile = 4 << 20

// Kinds of authenticator.
const (
	KindWebAuthn = "webauthn" // a WebAuthn public key credential (security key, Touch ID, Windows Hello)
	KindSSH      = "ssh"      // an OpenSSH FIDO key, signing with ssh-keygen -Y sign
)

// SSH key types that prove presence: OpenSSH's FIDO (security key) types.
// PROTOCOL.u2f in OpenSSH names them; any other key type signs without a
// touch and is refused.
const (
	SSHKeyEd25519 = "sk-ssh-ed25519@openssh.com"
	SSHKeyECDSA   = "sk-ecdsa-sha2-nistp256@openssh.com"
)

// How a root was enrolled (Authenticator.Enrolled).
const (
	// EnrolledTerminal: at a terminal that passed the person guard
	// (approval.PersonAtTerminal) and answered y on /dev/tty.
	EnrolledTerminal = "terminal"
	// EnrolledTestBuild: by a binary built with the test-only build tag,
	// which skips the person guard.
	EnrolledTestBuild = "test-build"
)

// Authenticator is one enrolled authenticator.
type Authenticator struct {
	// ID names it: for WebAuthn the credential ID in unpadded base64url
	// (the credential's "id" in the browser), for ssh the key's SHA256
	// fingerprint ("SHA256:…", as ssh-keygen -l prints it).
	ID      string    `json:"id"`
	Kind    string    `json:"kind"` // KindWebAuthn or KindSSH
	Name    string    `json:"name"` // chosen by the person, shown in lists
	AddedAt time.Time `json:"addedAt"`
	// AddedBy is the ID of the authenticator whose presence signature
	// allowed adding this one; empty for the first, enrolled unsigned.
	AddedBy string `json:"addedBy"`
	// Enrolled says, for the first entry (the root, which nothing signs),
	// how the person who enrolled it was proven: EnrolledTerminal, or
	// EnrolledTestBuild in a test build; empty in a store written before
	// it was recorded. It is what mcpepoch said when it wrote the entry,
	// not evidence: whoever can write the file can write it.
	Enrolled string `json:"enrolled,omitempty"`
	// SignCount is the highest signature counter seen (WebAuthn §6.1.1;
	// for sk keys the counter in the signature). It is not covered by the
	// store's Digest.
	SignCount uint32              `json:"signCount"`
	WebAuthn  *WebAuthnCredential `json:"webauthn,omitempty"`
	SSH       *SSHKey             `json:"ssh,omitempty"`
	// Confirmation is the signature by AddedBy over this entry (confirm.go);
	// nil only for the first.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// Evidence is the entry's FIDO attestation (attest.go), when the
	// authenticator gave one; Attestation says whether it verifies.
	Evidence *Attestation `json:"attestation,omitempty"`

	attested *Attested // set by Open and the constructors; never stored
}

// WebAuthnCredential is what a relying party keeps of a registered public
// key credential (WebAuthn §7.1 step 27: credential record).
type WebAuthnCredential struct {
	CredentialID []byte `json:"credentialId"`
	PublicKey    []byte `json:"publicKey"` // COSE_Key, as in the attested credential data
	AAGUID       []byte `json:"aaguid"`    // 16 bytes; all zero when the authenticator does not say
	// BackupEligible is the BE flag at registration; WebAuthn §7.2 step 21
	// refuses an assertion where it changed.
	BackupEligible  bool   `json:"backupEligible"`
	AttestationType string `json:"attestationType,omitempty"`
}

// SSHKey is an OpenSSH FIDO public key.
type SSHKey struct {
	// AuthorizedKey is the key in authorized_keys form: type, base64 blob
	// and an optional comment.
	AuthorizedKey string `json:"authorizedKey"`
}

// PublicKey parses k.
func (k *SSHKey) PublicKey() (ssh.PublicKey, error) {
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.AuthorizedKey))
	return pk, err
}

// NewSSH returns an authenticator for an OpenSSH public key in
// authorized_keys form (the content of KEY.pub). A key that is not an sk
// type is refused: it signs without a touch, so it never proves presence.
func NewSSH(authorizedKey []byte, name string, now time.Time) (Authenticator, error) {
	pk, comment, _, _, err := ssh.ParseAuthorizedKey(authorizedKey)
	if err != nil {
		return Authenticator{}, fmt.Errorf("ssh key: %w", err)
	}
	if t := pk.Type(); t != SSHKeyEd25519 && t != SSHKeyECDSA {
		return Authenticator{}, fmt.Errorf("ssh key of type %s: want %s or %s; a key without a security key signs without a touch and never proves presence", t, SSHKeyEd25519, SSHKeyECDSA)
	}
	if name == "" {
		name = comment
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
	if comment != "" {
		line += " " + comment
	}
	return Authenticator{ID: ssh.FingerprintSHA256(pk), Kind: KindSSH, Name: name, AddedAt: now.UTC(),
		SSH: &SSHKey{AuthorizedKey: line}}, nil
}

// NewWebAuthn returns an authenticator for a registered credential.
func NewWebAuthn(c WebAuthnCredential, name string, now time.Time) (Authenticator, error) {
	a := Authenticator{ID: base64.RawURLEncoding.EncodeToString(c.CredentialID), Kind: KindWebAuthn,
		Name: name, AddedAt: now.UTC(), WebAuthn: &c}
	if err := a.check(); err != nil {
		return Authenticator{}, err
	}
	a.Attest(nil)
	return a, nil
}

// check reports what makes a, read from a file or about to be added, not a
// well-formed authenticator.
func (a *Authenticator) check() error {
	switch {
	case a.ID == "":
		return errors.New(`member "id" missing or empty`)
	case a.Name == "":
		return errors.New(`member "name" missing or empty`)
	case a.AddedAt.IsZero():
		return errors.New(`member "addedAt" missing`)
	}
	switch a.Kind {
	case KindWebAuthn:
		w := a.WebAuthn
		if w == nil || len(w.CredentialID) == 0 {
			return errors.New(`member "webauthn.credentialId" missing or empty`)
		}
		if a.ID != base64.RawURLEncoding.EncodeToString(w.CredentialID) {
			return errors.New(`member "id" is not the base64url credential ID`)
		}
		if _, err := webauthncose.ParsePublicKey(w.PublicKey); err != nil {
			return fmt.Errorf(`member "webauthn.publicKey": not a COSE key: %v`, err)
		}
		if len(w.AAGUID) != 16 {
			return fmt.Errorf(`member "webauthn.aaguid": %d bytes, want 16`, len(w.AAGUID))
		}
	case KindSSH:
		if a.SSH == nil {
			return errors.New(`member "ssh" missing`)
		}
		b, err := NewSSH([]byte(a.SSH.AuthorizedKey), a.Name, a.AddedAt)
		if err != nil {
			return fmt.Errorf(`member "ssh.authorizedKey": %v`, err)
		}
		if b.ID != a.ID {
			return errors.New(`member "id" is not the key's SHA256 fingerprint`)
		}
	default:
		return fmt.Errorf(`member "kind" %q: want %q or %q`, a.Kind, KindWebAuthn, KindSSH)
	}
	return nil
}

// Store is the trust store as read from its directory.
type Store struct {
	dir string
	// Authenticators are the trusted entries, in file order.
	Authenticators []Authenticator
	// Unconfirmed are the entries whose confirmation does not verify; Open
	// then returns a *TamperedError, and nothing is trusted.
	Unconfirmed []Unconfirmed
}

type fileFormat struct {
	V              int             `json:"v"`
	Authenticators []Authenticator `json:"authenticators"`
}

// CorruptError reports a store file that cannot be read; it is left as is,
// and nothing in it is trusted. Err names the entry (authenticators[2])
// and member at fault where there is one.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// DefaultDir returns mcpepoch's config directory, userdirs.Config: under
// the home directory the account database gives the user,
// ~/.config/mcpepoch on Linux, ~/Library/Application Support/mcpepoch on
// macOS; never a directory the environment (HOME, XDG_CONFIG_HOME) names,
// which whoever launched the process chose. The error, prefixed
// "trust store: ", says why there is none (no account entry, a home that
// is not absolute).
func DefaultDir() (string, error) {
	d, err := userdirs.Config()
	if err != nil {
		return "", fmt.Errorf("trust store: %w", err)
	}
	return d, nil
}

// Open reads the store in dir after CheckPath has passed for it. A missing
// directory or file is an empty store (no authenticator enrolled). A file
// that is not a version 1 store, or with an entry that is not a
// well-formed authenticator or repeats an ID, is a *CorruptError; a file
// or directory with a wrong owner or mode is a *PermissionError. A store
// with an entry, other than the first, whose confirmation is missing or
// does not verify (confirm.go) is a *TamperedError, returned with the
// store read so far (for listing it, never for trusting it); the file is
// never rewritten by this package then.
func Open(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	s := &Store{dir: dir}
	b, err := safefile.ReadFile(path, maxStoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if f.V != 1 {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf(`member "v" is %d, want 1`, f.V)}
	}
	seen := map[string]bool{}
	for i := range f.Authenticators {
		a := &f.Authenticators[i]
		if err := a.check(); err != nil {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("authenticators[%d]: %v", i, err)}
		}
		if seen[a.ID] {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("authenticators[%d]: id %s repeated", i, a.ID)}
		}
		seen[a.ID] = true
	}
	for i := range f.Authenticators {
		a := &f.Authenticators[i]
		v := verifyEvidence(a)
		a.attested = &v
	}
	s.Authenticators, s.Unconfirmed = confirm(f.Authenticators)
	if len(s.Unconfirmed) > 0 {
		return s, &TamperedError{Path: path, Entries: s.Unconfirmed}
	}
	return s, nil
}

// Dir returns the directory s was opened from.
func (s *Store) Dir() string { return s.dir }

// Path returns the store's file.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// Lookup returns the enrolled authenticator with id.
func (s *Store) Lookup(id string) (*Authenticator, bool) {
	for i := range s.Authenticators {
		if s.Authenticators[i].ID == id {
			return &s.Authenticators[i], true
		}
	}
	return nil, false
}

// Kind returns the enrolled authenticators of one kind, in store order.
func (s *Store) Kind(kind string) []Authenticator {
	var out []Authenticator
	for _, a := range s.Authenticators {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// Digest returns the SHA-256 ("sha256:…") of the RFC 8785 JSON of the
// store's version and authenticators with every signCount set to 0: it
// changes when what is trusted changes, not when an authenticator is used.
// An empty store has a digest too, so a host that pinned "nothing
// enrolled" notices the first enrollment.
func (s *Store) Digest() string {
	f := fileFormat{V: 1, Authenticators: make([]Authenticator, len(s.Authenticators))}
	for i, a := range s.Authenticators {
		a.SignCount = 0
		f.Authenticators[i] = a
	}
	b, err := json.Marshal(f)
	if err == nil {
		b, err = jcs.Transform(b)
	}
	if err != nil {
		panic("trust: store does not marshal: " + err.Error()) // only well-formed values reach here
	}
	return grant.Digest(sha256.Sum256(b)).String()
}

// encode returns the file content for s.
func (s *Store) encode() ([]byte, error) {
	auth := s.Authenticators
	if auth == nil {
		auth = []Authenticator{}
	}
	b, err := json.MarshalIndent(fileFormat{V: 1, Authenticators: auth}, "", "  ")
	return append(b, '\n'), err
}
