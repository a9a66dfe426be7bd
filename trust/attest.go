package trust

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// UnattestedWarning is the plain warning every screen that shows the root
// puts beside it when the root carries no attestation that verifies.
const UnattestedWarning = "enrolled without attestation: any program running as you could have enrolled it"

// Attestation is FIDO attestation evidence kept with an entry: the
// authenticator's statement, made at registration, that the credential's
// key was made inside a device whose maker's certificate chains to one of
// the bundled vendor roots (roots/). It is re-verified on every Open,
// against the entry's own public key, so an entry edited to claim an
// attestation, or carrying another credential's, is not attested.
//
// Shape (byte strings in standard base64):
//
//	"attestation": {"format": "packed", "root": "Yubico U2F Root CA Serial 457200631",
//	  "statement": "…attestationObject…", "clientDataHash": "…32 bytes…"}
type Attestation struct {
	// Format is the attestation statement format (WebAuthn §8: "packed",
	// "fido-u2f", "tpm", "apple" …).
	Format string `json:"format"`
	// Root is the subject of the vendor root the chain ended at when the
	// entry was enrolled; Open checks it again.
	Root string `json:"root"`
	// Statement is the evidence: a WebAuthn attestationObject (CBOR,
	// WebAuthn §6.5).
	Statement []byte `json:"statement"`
	// ClientDataHash is what the attestation signature covers besides the
	// authenticator data: the SHA-256 of the registration's
	// clientDataJSON.
	ClientDataHash []byte `json:"clientDataHash"`
}

// Attested is what Open found of an entry's attestation.
type Attested struct {
	OK     bool   // the statement verified, its chain ends at a bundled root, and it attests this entry's key
	Format string // attestation statement format
	Root   string // the vendor root's subject
	AAGUID string // the authenticator model (WebAuthn), as a UUID; "" for ssh keys
	// Why says why OK is false: no attestation, or what failed.
	Why string
}

func (v Attested) String() string {
	if !v.OK {
		return "unattested (" + v.Why + ")"
	}
	return fmt.Sprintf("attested (%s, %s)", v.Format, v.Root)
}

// Attest sets a's attestation evidence (nil: none) and verifies it; the
// result is what Attestation returns. An attestation that does not verify
// is kept, with why, and a counts as unattested.
func (a *Authenticator) Attest(e *Attestation) Attested {
	if e != nil {
		v := verifyEvidence(&Authenticator{Kind: a.Kind, WebAuthn: a.WebAuthn, AddedAt: a.AddedAt, Evidence: e})
		e.Root = v.Root
	}
	a.Evidence = e
	v := verifyEvidence(a)
	a.attested = &v
	return v
}

// Attestation returns what Open, or Attest, found of a's attestation.
func (a *Authenticator) Attestation() Attested {
	if a.attested == nil {
		return Attested{Why: "no attestation"}
	}
	return *a.attested
}

// verifyEvidence checks a's attestation: the statement verifies by its
// format's procedure (go-webauthn, WebAuthn §8), it attests a's own
// credential (credential ID and public key in its authenticator data, for
// RP ID localhost), and its certificate chain ends at an attestation root
// as of a.AddedAt.
func verifyEvidence(a *Authenticator) Attested {
	e := a.Evidence
	if e == nil {
		return Attested{Why: "no attestation"}
	}
	v := Attested{Format: e.Format}
	var err error
	switch {
	case a.Kind == KindWebAuthn && a.WebAuthn != nil:
		v.AAGUID, v.Root, err = verifyWebAuthnAttestation(a.WebAuthn, e, a.AddedAt)
	default:
		err = fmt.Errorf("format %q does not fit a %s authenticator", e.Format, a.Kind)
	}
	if err != nil {
		v.Why = err.Error()
		return v
	}
	if e.Root != "" && e.Root != v.Root {
		v.Why = fmt.Sprintf("says root %q, chain ends at %q", e.Root, v.Root)
		return v
	}
	v.OK = true
	return v
}

// verifyWebAuthnAttestation checks a WebAuthn attestationObject against
// the credential c it should attest.
func verifyWebAuthnAttestation(c *WebAuthnCredential, e *Attestation, when time.Time) (aaguid, root string, err error) {
	var ao protocol.AttestationObject
	if err := webauthncbor.Unmarshal(e.Statement, &ao); err != nil {
		return "", "", fmt.Errorf("attestation object: %v", err)
	}
	if err := ao.AuthData.Unmarshal(ao.RawAuthData); err != nil {
		return "", "", fmt.Errorf("authenticator data: %v", err)
	}
	rp := sha256.Sum256([]byte("localhost"))
	att := ao.AuthData.AttData
	switch {
	case ao.Format != e.Format:
		return "", "", fmt.Errorf("format %q, statement says %q", e.Format, ao.Format)
	case !bytes.Equal(ao.AuthData.RPIDHash, rp[:]):
		return "", "", errors.New("authenticator data is not for RP ID localhost")
	case !bytes.Equal(att.CredentialID, c.CredentialID) || !bytes.Equal(att.CredentialPublicKey, c.PublicKey):
		return "", "", errors.New("it attests another credential")
	}
	if err := ao.VerifyAttestation(e.ClientDataHash, nil, protocol.AttestationPolicy{}, protocol.SignaturePolicy{}); err != nil {
		return "", "", fmt.Errorf("statement: %v", describeErr(err))
	}
	var chain [][]byte
	x5c, _ := ao.AttStatement["x5c"].([]any)
	for _, x := range x5c {
		if der, ok := x.([]byte); ok {
			chain = append(chain, der)
		}
	}
	if root, err = chainToRoot(chain, when); err != nil {
		return "", "", err
	}
	if b := att.AAGUID; len(b) == 16 {
		aaguid = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	return aaguid, root, nil
}

// describeErr adds go-webauthn's details to its error.
func describeErr(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.DevInfo != "" {
		return pe.Error() + ": " + pe.DevInfo
	}
	return err.Error()
}
