// Package softkey holds software authenticators for tests: a WebAuthn
// credential on P-256 and OpenSSH FIDO keys (sk-ssh-ed25519,
// sk-ecdsa-sha2-nistp256) that sign with whatever flags and counter a test
// asks for, so tests can make signatures with and without user presence
// that no real authenticator would. Never use it outside tests: a software
// key proves no one.
package softkey

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/big"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"golang.org/x/crypto/ssh"
)

// Authenticator data flags (WebAuthn §6.1; the same bits in an sk
// signature's flags byte, OpenSSH PROTOCOL.u2f).
const (
	FlagUserPresent  = 0x01
	FlagUserVerified = 0x04
	FlagAttested     = 0x40
)

// SSHKey is an OpenSSH FIDO key held in memory.
type SSHKey struct {
	Type        string // ssh key type, sk-ssh-ed25519@openssh.com or sk-ecdsa-sha2-nistp256@openssh.com
	Application string // FIDO application, "ssh:" by default in OpenSSH
	ed          ed25519.PrivateKey
	ec          *ecdsa.PrivateKey
	pub         ssh.PublicKey
}

// NewSSHEd25519 returns a fresh sk-ssh-ed25519@openssh.com key.
func NewSSHEd25519() *SSHKey {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	return SSHEd25519FromSeed(priv.Seed())
}

// SSHEd25519FromSeed returns the sk-ssh-ed25519@openssh.com key of a
// 32-byte ed25519 seed: a software key dressed as a FIDO one, as a program
// can make without any security key.
func SSHEd25519FromSeed(seed []byte) *SSHKey {
	priv := ed25519.NewKeyFromSeed(seed)
	k := &SSHKey{Type: "sk-ssh-ed25519@openssh.com", Application: "ssh:", ed: priv}
	k.pub = mustParse(ssh.Marshal(struct {
		Name, Key, App string
	}{k.Type, string(priv.Public().(ed25519.PublicKey)), k.Application}))
	return k
}

// Seed returns an ed25519 key's seed (nil for ECDSA).
func (k *SSHKey) Seed() []byte {
	if k.ed == nil {
		return nil
	}
	return k.ed.Seed()
}

// NewSSHECDSA returns a fresh sk-ecdsa-sha2-nistp256@openssh.com key.
func NewSSHECDSA() *SSHKey {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k := &SSHKey{Type: "sk-ecdsa-sha2-nistp256@openssh.com", Application: "ssh:", ec: priv}
	point, _ := priv.PublicKey.Bytes()
	k.pub = mustParse(ssh.Marshal(struct {
		Name, Curve, Key, App string
	}{k.Type, "nistp256", string(point), k.Application}))
	return k
}

func mustParse(b []byte) ssh.PublicKey {
	pk, err := ssh.ParsePublicKey(b)
	if err != nil {
		panic("softkey: " + err.Error())
	}
	return pk
}

// PublicKey returns the key's public half.
func (k *SSHKey) PublicKey() ssh.PublicKey { return k.pub }

// AuthorizedKey returns the public key as a KEY.pub line with comment.
func (k *SSHKey) AuthorizedKey(comment string) []byte {
	b := ssh.MarshalAuthorizedKey(k.pub)
	return append(append(b[:len(b)-1], ' '), comment+"\n"...)
}

// Sign returns an sk signature over data with the given flags and counter:
// the key signs SHA256(application) || flags || counter || SHA256(data)
// (OpenSSH PROTOCOL.u2f), and flags and counter travel after the signature.
func (k *SSHKey) Sign(data []byte, flags byte, counter uint32) *ssh.Signature {
	app := sha256.Sum256([]byte(k.Application))
	msg := sha256.Sum256(data)
	signed := append(app[:], flags)
	signed = binary.BigEndian.AppendUint32(signed, counter)
	signed = append(signed, msg[:]...)
	rest := binary.BigEndian.AppendUint32([]byte{flags}, counter)
	if k.ed != nil {
		return &ssh.Signature{Format: k.Type, Blob: ed25519.Sign(k.ed, signed), Rest: rest}
	}
	h := sha256.Sum256(signed)
	r, s, _ := ecdsa.Sign(rand.Reader, k.ec, h[:])
	blob := ssh.Marshal(struct{ R, S *big.Int }{r, s})
	return &ssh.Signature{Format: k.Type, Blob: blob, Rest: rest}
}

// WebAuthnKey is a WebAuthn public key credential on P-256 (ES256).
type WebAuthnKey struct {
	CredentialID []byte
	AAGUID       []byte
	priv         *ecdsa.PrivateKey
}

// NewWebAuthn returns a fresh credential with a random 32-byte ID.
func NewWebAuthn() *WebAuthnKey {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	id := make([]byte, 32)
	rand.Read(id)
	return &WebAuthnKey{CredentialID: id, AAGUID: make([]byte, 16), priv: priv}
}

// COSEKey returns the credential public key as a COSE_Key (EC2, ES256).
func (k *WebAuthnKey) COSEKey() []byte {
	point, _ := k.priv.PublicKey.Bytes() // 0x04 || X || Y
	b, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         1, // P-256
		XCoord:        point[1:33],
		YCoord:        point[33:],
	})
	if err != nil {
		panic("softkey: " + err.Error())
	}
	return b
}

// AuthenticatorData returns rpIdHash || flags || signCount (WebAuthn §6.1),
// without attested credential data.
func AuthenticatorData(rpID string, flags byte, counter uint32) []byte {
	h := sha256.Sum256([]byte(rpID))
	return binary.BigEndian.AppendUint32(append(h[:], flags), counter)
}

// SignAssertion returns the ES256 signature (ASN.1 DER) over
// authenticatorData || SHA256(clientDataJSON) (WebAuthn §6.3.3 step 11).
func (k *WebAuthnKey) SignAssertion(authData, clientDataJSON []byte) []byte {
	cd := sha256.Sum256(clientDataJSON)
	h := sha256.Sum256(append(append([]byte{}, authData...), cd[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, h[:])
	if err != nil {
		panic("softkey: " + err.Error())
	}
	return sig
}

// SSHSIG returns an armored SSHSIG envelope (ssh-keygen -Y sign) over
// message in namespace, hashed with sha512 as ssh-keygen does, signed by k
// with the given flags and counter.
func (k *SSHKey) SSHSIG(namespace string, message []byte, flags byte, counter uint32) []byte {
	return ArmorSSHSIG(k.pub, namespace, k.Sign(SSHSIGSignedData(namespace, message), flags, counter))
}

// SSHSIGSignedData returns what a key signs for an SSHSIG with sha512 over
// message (OpenSSH PROTOCOL.sshsig).
func SSHSIGSignedData(namespace string, message []byte) []byte {
	h := sha512.Sum512(message)
	return append([]byte("SSHSIG"), ssh.Marshal(struct {
		Namespace, Reserved, Hash string
		H                         []byte
	}{namespace, "", "sha512", h[:]})...)
}

// ArmorSSHSIG wraps a signature by pub into an armored sha512 SSHSIG.
func ArmorSSHSIG(pub ssh.PublicKey, namespace string, sig *ssh.Signature) []byte {
	blob := append([]byte("SSHSIG"), ssh.Marshal(struct {
		Version                   uint32
		PublicKey                 []byte
		Namespace, Reserved, Hash string
		Signature                 []byte
	}{1, pub.Marshal(), namespace, "", "sha512", ssh.Marshal(sig)})...)
	b64 := base64.StdEncoding.EncodeToString(blob)
	var out bytes.Buffer
	out.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(b64) > 70 {
		out.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	out.WriteString(b64 + "\n-----END SSH SIGNATURE-----\n")
	return out.Bytes()
}

// Assertion returns what navigator.credentials.get resolves to, in its
// toJSON form (WebAuthn §5.1.8), for an assertion over challenge made at
// origin for rpID, with the given authenticator flags and counter, and
// userHandle as the user.id.
func (k *WebAuthnKey) Assertion(origin, rpID string, challenge, userHandle []byte, flags byte, counter uint32) []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	ad, cd, _ := k.RawAssertion(origin, rpID, challenge, flags, counter)
	out, _ := json.Marshal(map[string]any{
		"id": b64(k.CredentialID), "rawId": b64(k.CredentialID), "type": "public-key",
		"authenticatorAttachment": "cross-platform", "clientExtensionResults": map[string]any{},
		"response": map[string]string{"clientDataJSON": b64(cd), "authenticatorData": b64(ad),
			"signature": b64(k.SignAssertion(ad, cd)), "userHandle": b64(userHandle)},
	})
	return out
}

// RawAssertion returns the authenticator data, client data JSON and
// signature of an assertion over challenge made at origin for rpID.
func (k *WebAuthnKey) RawAssertion(origin, rpID string, challenge []byte, flags byte, counter uint32) (authData, clientDataJSON, sig []byte) {
	cd, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": base64.RawURLEncoding.EncodeToString(challenge), "origin": origin, "crossOrigin": false})
	ad := AuthenticatorData(rpID, flags, counter)
	return ad, cd, k.SignAssertion(ad, cd)
}
