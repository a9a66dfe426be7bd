// Package sshsig verifies OpenSSH signatures made with ssh-keygen -Y sign
// (the SSHSIG format, OpenSSH PROTOCOL.sshsig) by FIDO keys
// (sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com), and
// requires the user-presence flag the security key sets after a touch. A
// signature by any other key type never counts as presence, however valid.
//
// Armored form, as ssh-keygen writes it:
//
//	-----BEGIN SSH SIGNATURE-----
//	base64 of the blob, wrapped at 70 columns
//	-----END SSH SIGNATURE-----
//
// Blob (SSH wire encoding, RFC 4251 §5: string is uint32 length + bytes):
//
//	byte[6] "SSHSIG"; uint32 version = 1; string public key;
//	string namespace; string reserved (empty); string hash algorithm
//	("sha256" or "sha512"); string signature
//
// What the key signed: byte[6] "SSHSIG", string namespace, string reserved,
// string hash algorithm, string H(message). For an sk key the signature
// ends with the authenticator's flags byte and a uint32 counter, covered by
// the signature (OpenSSH PROTOCOL.u2f).
package sshsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/trust"
)

// GrantNamespace is the namespace of a grant approval:
// ssh-keygen -Y sign -n mcpepoch-grant@v1 -f KEY over the 32 bytes of the
// grant's Digest. Store changes use trust.SSHNamespace.
const GrantNamespace = "mcpepoch-grant@v1"

// MaxArmored bounds the armored signature read (a real one is under 1 KiB).
const MaxArmored = 16 << 10

// sk authenticator flags (the WebAuthn/CTAP bits).
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
)

// Errors of Verify.
var (
	// ErrNotSK: the key is not a FIDO key, so the signature proves no
	// touch (ssh-ed25519, ecdsa, rsa …).
	ErrNotSK = errors.New("not a FIDO (sk) key: its signature never proves presence")
	// ErrNoPresence: the security key signed without the user-presence flag
	// (no touch).
	ErrNoPresence = errors.New("the security key signed without user presence (no touch)")
	// ErrNoVerification: user verification was required and the flag is
	// not set.
	ErrNoVerification = errors.New("user verification was required and the security key did not verify the user")
	// ErrNotEnrolled: the signing key is not in the trust store.
	ErrNotEnrolled = errors.New("the signing key is not an enrolled authenticator")
)

// Signature is a parsed SSHSIG envelope.
type Signature struct {
	PublicKey     ssh.PublicKey
	Namespace     string
	HashAlgorithm string // "sha256" or "sha512"
	Signature     *ssh.Signature
}

// Parse reads an armored SSHSIG. It checks the envelope's shape (magic,
// version 1, reserved empty, a known hash algorithm, a signature whose
// format matches the key), not the signature itself.
func Parse(armored []byte) (*Signature, error) {
	if len(armored) > MaxArmored {
		return nil, fmt.Errorf("sshsig: %d bytes, more than %d", len(armored), MaxArmored)
	}
	const begin, end = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"
	body, ok := bytes.CutPrefix(bytes.TrimSpace(armored), []byte(begin))
	if !ok {
		return nil, errors.New("sshsig: no " + begin + " line")
	}
	body, ok = bytes.CutSuffix(body, []byte(end))
	if !ok {
		return nil, errors.New("sshsig: no " + end + " line")
	}
	blob, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
	if err != nil {
		return nil, fmt.Errorf("sshsig: base64: %v", err)
	}
	var w struct {
		Magic     [6]byte
		Version   uint32
		PublicKey []byte
		Namespace string
		Reserved  string
		Hash      string
		Signature []byte
	}
	if err := ssh.Unmarshal(blob, &w); err != nil {
		return nil, fmt.Errorf("sshsig: %v", err)
	}
	switch {
	case string(w.Magic[:]) != "SSHSIG":
		return nil, errors.New(`sshsig: magic is not "SSHSIG"`)
	case w.Version != 1:
		return nil, fmt.Errorf("sshsig: version %d, want 1", w.Version)
	case w.Reserved != "":
		return nil, errors.New("sshsig: reserved field not empty")
	case w.Hash != "sha256" && w.Hash != "sha512":
		return nil, fmt.Errorf("sshsig: hash algorithm %q, want sha256 or sha512", w.Hash)
	}
	pk, err := ssh.ParsePublicKey(w.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("sshsig: public key: %v", err)
	}
	sig := new(ssh.Signature)
	if err := ssh.Unmarshal(w.Signature, sig); err != nil {
		return nil, fmt.Errorf("sshsig: signature: %v", err)
	}
	return &Signature{PublicKey: pk, Namespace: w.Namespace, HashAlgorithm: w.Hash, Signature: sig}, nil
}

// signedData returns what the key signed for message.
func (s *Signature) signedData(message []byte) []byte {
	var h []byte
	if s.HashAlgorithm == "sha256" {
		d := sha256.Sum256(message)
		h = d[:]
	} else {
		d := sha512.Sum512(message)
		h = d[:]
	}
	return append([]byte("SSHSIG"), ssh.Marshal(struct {
		Namespace, Reserved, Hash string
		H                         []byte
	}{s.Namespace, "", s.HashAlgorithm, h})...)
}

// Verify checks that s signs message in namespace with a valid signature
// by s.PublicKey. It returns ErrNotSK for a key that is not a FIDO key
// (after checking nothing else: such a key never counts), and
// ErrNoPresence when the user-presence flag is not set. On success it
// returns the authenticator's flags and counter.
func (s *Signature) Verify(message []byte, namespace string) (flags byte, counter uint32, err error) {
	if t := s.PublicKey.Type(); t != trust.SSHKeyEd25519 && t != trust.SSHKeyECDSA {
		return 0, 0, fmt.Errorf("key type %s: %w", t, ErrNotSK)
	}
	if s.Namespace != namespace {
		return 0, 0, fmt.Errorf("sshsig: namespace %q, want %q", s.Namespace, namespace)
	}
	if s.Signature.Format != s.PublicKey.Type() || len(s.Signature.Rest) != 5 {
		return 0, 0, fmt.Errorf("sshsig: signature format %q with %d trailing bytes does not fit key type %s", s.Signature.Format, len(s.Signature.Rest), s.PublicKey.Type())
	}
	flags, counter = s.Signature.Rest[0], binary.BigEndian.Uint32(s.Signature.Rest[1:])
	// Checked here, not only by x/crypto/ssh, so that no key option can
	// waive it; without the flag nothing else matters.
	if flags&flagUserPresent == 0 {
		return flags, counter, ErrNoPresence
	}
	// Flags and counter are covered by the signature.
	if err := s.PublicKey.Verify(s.signedData(message), s.Signature); err != nil {
		return 0, 0, fmt.Errorf("sshsig: %v", err)
	}
	return flags, counter, nil
}

// VerifyPresence checks an armored SSHSIG over the 32 bytes of challenge
// (a grant.Proposal's Digest, or a trust.Change's Challenge) in namespace
// (GrantNamespace or trust.SSHNamespace), by an ssh authenticator enrolled
// in store, with user presence and, when requireUV, user verification. It
// returns the verified trust.Presence. It does not record the counter:
// pass the result to store.Apply, or call store.RecordUse before acting on
// an approval.
func VerifyPresence(store *trust.Store, armored []byte, challenge grant.Digest, namespace string, requireUV bool) (trust.Presence, error) {
	sig, err := Parse(armored)
	if err != nil {
		return trust.Presence{}, err
	}
	id := ssh.FingerprintSHA256(sig.PublicKey)
	a, ok := store.Lookup(id)
	if !ok || a.Kind != trust.KindSSH {
		return trust.Presence{}, fmt.Errorf("key %s: %w", id, ErrNotEnrolled)
	}
	enrolled, err := a.SSH.PublicKey()
	if err != nil || !bytes.Equal(enrolled.Marshal(), sig.PublicKey.Marshal()) {
		return trust.Presence{}, fmt.Errorf("key %s: %w", id, ErrNotEnrolled)
	}
	flags, counter, err := sig.Verify(challenge[:], namespace)
	if err != nil {
		return trust.Presence{}, err
	}
	if requireUV && flags&flagUserVerified == 0 {
		return trust.Presence{}, ErrNoVerification
	}
	return trust.Presence{AuthenticatorID: id, Challenge: challenge, SignCount: counter,
		UserVerified: flags&flagUserVerified != 0, SSHSIG: armored}, nil
}

func init() { trust.RegisterSSHVerifier(verifyKept) }

// verifyKept checks a confirmation kept in the trust store: armored signs
// message in namespace, by exactly the key authorizedKey, with presence.
func verifyKept(authorizedKey string, armored, message []byte, namespace string) error {
	sig, err := Parse(armored)
	if err != nil {
		return err
	}
	want, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil || !bytes.Equal(want.Marshal(), sig.PublicKey.Marshal()) {
		return errors.New("signed by another key")
	}
	_, _, err = sig.Verify(message, namespace)
	return err
}
