package trust

import "fmt"

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
	// "fido-u2f", "tpm", "apple" …) or SSHAttestFormat for an ssh key.
	Format string `json:"format"`
	// Root is the subject of the vendor root the chain ended at when the
	// entry was enrolled; Open checks it again.
	Root string `json:"root"`
	// Statement is the evidence: a WebAuthn attestationObject (CBOR,
	// WebAuthn §6.5), or the ssh-sk-attest-v01 blob ssh-keygen writes.
	Statement []byte `json:"statement"`
	// ClientDataHash is what the attestation signature covers besides the
	// authenticator data: the SHA-256 of the registration's
	// clientDataJSON (WebAuthn), or of the challenge ssh-keygen passed.
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

// Attestation returns what Open, or the constructor, found of a's
// attestation.
func (a *Authenticator) Attestation() Attested {
	if a.attested == nil {
		return Attested{Why: "no attestation"}
	}
	return *a.attested
}
