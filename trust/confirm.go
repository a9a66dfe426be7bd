package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// Confirmation is the evidence, kept in the store with every authenticator
// but the first, that an enrolled authenticator signed its addition: a
// WebAuthn assertion whose challenge is the Change's Challenge (or an
// SSHSIG over it in SSHNamespace, by an ssh key), recomputed
// from the entry itself (signCount 0, addedBy and confirmation empty),
// StoreDigest and Nonce. Open verifies it on every read, so an entry
// written into the file by hand, or one whose content changed since it was
// signed, is refused (TamperedError).
//
// Shape (byte strings in standard base64):
//
//	"confirmation": {"by": "AbC…", "storeDigest": "sha256:…", "nonce": "…",
//	  "webauthn": {"authenticatorData": "…", "clientDataJSON": "…", "signature": "…"}}
type Confirmation struct {
	By          string     `json:"by"` // ID of the signing authenticator, an earlier entry
	StoreDigest string     `json:"storeDigest"`
	Nonce       string     `json:"nonce"`
	WebAuthn    *Assertion `json:"webauthn,omitempty"`
	// SSHSIG is the armored signature (ssh-keygen -Y sign -n
	// mcpepoch-trust@v1) when the signer is an ssh key.
	SSHSIG string `json:"sshsig,omitempty"`
}

// sshVerifier checks an armored SSHSIG over message in namespace by the
// key in authorized_keys form, with user presence. Package sshsig, which
// imports this one, provides it (RegisterSSHVerifier); without it no ssh
// confirmation verifies.
var sshVerifier func(authorizedKey string, armored, message []byte, namespace string) error

// RegisterSSHVerifier sets the SSHSIG verifier of ssh confirmations; package
// sshsig calls it from its init.
func RegisterSSHVerifier(fn func(authorizedKey string, armored, message []byte, namespace string) error) {
	sshVerifier = fn
}

// Assertion is the signed part of a WebAuthn assertion (WebAuthn §6.3.3:
// the signature covers authenticatorData || SHA-256(clientDataJSON)).
type Assertion struct {
	AuthenticatorData []byte `json:"authenticatorData"`
	ClientDataJSON    []byte `json:"clientDataJSON"`
	Signature         []byte `json:"signature"`
}

// TamperedError reports a store with an entry whose confirmation is
// missing or does not verify. The file is left as is and nothing in it is
// trusted until a person fixes it; the store Open returns with it lists
// the confirmed entries in Authenticators and the others in Unconfirmed.
type TamperedError struct {
	Path    string
	Entries []Unconfirmed
}

// Unconfirmed is an entry of the store that is not trusted.
type Unconfirmed struct {
	Index         int // in the file's "authenticators"
	Authenticator Authenticator
	Why           string
}

func (e *TamperedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: tampered trust store, nothing in it is trusted:", e.Path)
	for i, u := range e.Entries {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " authenticators[%d] (%s) %s", u.Index, u.Authenticator.ID, u.Why)
	}
	return b.String()
}

// Root returns the first authenticator, the one trusted on first use that
// every other chains to; nil for an empty store. Its ID is the store's
// root fingerprint: a store replaced as a whole has another.
func (s *Store) Root() *Authenticator {
	if len(s.Authenticators) == 0 {
		return nil
	}
	return &s.Authenticators[0]
}

// confirm sorts all, read from a file, into the entries that verify (the
// first, and every other confirmed by an earlier confirmed one) and the
// rest.
func confirm(all []Authenticator) (ok []Authenticator, bad []Unconfirmed) {
	for i, a := range all {
		if i == 0 {
			if a.Confirmation != nil || a.AddedBy != "" {
				bad = append(bad, Unconfirmed{i, a, "is the first entry but says it was confirmed by another"})
				continue
			}
			ok = append(ok, a)
			continue
		}
		if err := verifyEntry(a, ok); err != nil {
			bad = append(bad, Unconfirmed{i, a, err.Error()})
			continue
		}
		ok = append(ok, a)
	}
	return ok, bad
}

// verifyEntry checks a's confirmation against the trusted entries before it.
func verifyEntry(a Authenticator, trusted []Authenticator) error {
	c := a.Confirmation
	if c == nil {
		return errors.New("has no confirmation by an enrolled authenticator")
	}
	if a.AddedBy != c.By {
		return fmt.Errorf("says addedBy %s but is confirmed by %s", a.AddedBy, c.By)
	}
	var signer *Authenticator
	for i := range trusted {
		if trusted[i].ID == c.By {
			signer = &trusted[i]
		}
	}
	if signer == nil {
		return fmt.Errorf("is confirmed by %s, not a confirmed entry before it", c.By)
	}
	ch, err := (&Change{Op: OpAdd, Authenticator: bare(a), StoreDigest: c.StoreDigest, Nonce: c.Nonce}).challenge()
	if err != nil {
		return err
	}
	if signer.Kind == KindSSH {
		if sshVerifier == nil {
			return errors.New("no SSHSIG verifier in this program")
		}
		err = sshVerifier(signer.SSH.AuthorizedKey, []byte(c.SSHSIG), ch[:], SSHNamespace)
	} else {
		err = verifyAssertion(signer, c.WebAuthn, ch[:])
	}
	if err != nil {
		return fmt.Errorf("confirmation by %s does not verify: %v", c.By, err)
	}
	return nil
}

// bare returns a as it is signed: no counter, no confirmation.
func bare(a Authenticator) Authenticator {
	a.SignCount, a.AddedBy, a.Confirmation = 0, "", nil
	return a
}

// verifyAssertion checks that as is a WebAuthn assertion by signer over
// challenge, for RP ID localhost at a localhost origin, with user presence.
// The origin's port is not known here; the ceremony checked it when the
// assertion was made.
func verifyAssertion(signer *Authenticator, as *Assertion, challenge []byte) error {
	if signer.WebAuthn == nil {
		return errors.New(`signer has no member "webauthn"`)
	}
	if as == nil {
		return errors.New(`member "webauthn" missing`)
	}
	var cd struct {
		Type, Challenge, Origin string
	}
	if err := json.Unmarshal(as.ClientDataJSON, &cd); err != nil {
		return fmt.Errorf("clientDataJSON: %v", err)
	}
	if cd.Type != "webauthn.get" || cd.Challenge != base64.RawURLEncoding.EncodeToString(challenge) || !strings.HasPrefix(cd.Origin, "http://localhost:") {
		return errors.New("client data is not an assertion over this entry at a localhost origin")
	}
	rp := sha256.Sum256([]byte("localhost"))
	ad := as.AuthenticatorData
	if len(ad) < 37 || !bytes.Equal(ad[:32], rp[:]) || ad[32]&0x01 == 0 {
		return errors.New("authenticator data is not for RP ID localhost with user presence")
	}
	key, err := webauthncose.ParsePublicKey(signer.WebAuthn.PublicKey)
	if err != nil {
		return err
	}
	h := sha256.Sum256(as.ClientDataJSON)
	ok, err := webauthncose.VerifySignature(key, append(bytes.Clone(ad), h[:]...), as.Signature)
	if err != nil || !ok {
		return fmt.Errorf("bad signature (%v)", err)
	}
	return nil
}
