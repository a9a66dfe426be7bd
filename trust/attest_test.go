package trust

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
)

// testCA is a certificate authority made in the test, standing in for a
// vendor's attestation root.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key}
}

// trustCA makes ca an attestation root for the rest of the test.
func trustCA(t *testing.T, ca *testCA) {
	saved := testRoots
	testRoots = append(testRoots[:len(testRoots):len(testRoots)], ca.cert)
	t.Cleanup(func() { testRoots = saved })
}

// packedAttestation returns a "packed" attestation object (WebAuthn §8.2)
// for credential k at RP ID localhost, signed by an attestation key whose
// certificate ca issued, and the client data hash it covers.
func packedAttestation(t *testing.T, ca *testCA, k *softkey.WebAuthnKey) (object, clientDataHash []byte) {
	t.Helper()
	attKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		Subject:               pkix.Name{Country: []string{"US"}, Organization: []string{"Test Vendor"}, OrganizationalUnit: []string{"Authenticator Attestation"}, CommonName: "Test Batch"},
		BasicConstraintsValid: true}
	leaf, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &attKey.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	rp := sha256.Sum256([]byte("localhost"))
	ad := append(rp[:], 0x41) // UP, AT
	ad = binary.BigEndian.AppendUint32(ad, 0)
	ad = append(ad, k.AAGUID...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(k.CredentialID)))
	ad = append(append(ad, k.CredentialID...), k.COSEKey()...)
	cdh := sha256.Sum256([]byte(`{"type":"webauthn.create"}`))
	h := sha256.Sum256(append(append([]byte{}, ad...), cdh[:]...))
	sig, _ := ecdsa.SignASN1(rand.Reader, attKey, h[:])
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "packed", "authData": ad,
		"attStmt": map[string]any{"alg": -7, "sig": sig, "x5c": []any{leaf}}})
	if err != nil {
		t.Fatal(err)
	}
	return obj, cdh[:]
}

func webauthnEntry(t *testing.T, k *softkey.WebAuthnKey) Authenticator {
	t.Helper()
	a, err := NewWebAuthn(WebAuthnCredential{CredentialID: k.CredentialID, PublicKey: k.COSEKey(), AAGUID: k.AAGUID}, "key", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAttestationChainsToTrustedRoot: a packed attestation whose
// certificate a trusted root issued makes the entry attested, kept and
// re-verified by Open; the same statement under an untrusted root, with a
// broken signature, or for another credential, is unattested, with why.
func TestAttestationChainsToTrustedRoot(t *testing.T) {
	ca := newTestCA(t, "Test Vendor Root")
	k := softkey.NewWebAuthn()
	obj, cdh := packedAttestation(t, ca, k)

	a := webauthnEntry(t, k)
	if v := a.Attest(&Attestation{Format: "packed", Statement: obj, ClientDataHash: cdh}); v.OK || !strings.Contains(v.Why, "unknown authority") {
		t.Fatalf("attestation by an untrusted root: %+v, want unattested, unknown authority", v)
	}
	trustCA(t, ca)
	a = webauthnEntry(t, k)
	if v := a.Attest(&Attestation{Format: "packed", Statement: obj, ClientDataHash: cdh}); !v.OK || v.Root != "CN=Test Vendor Root" || v.Format != "packed" {
		t.Fatalf("attestation by a trusted root: %+v", v)
	}

	s := enrollFirst(t, storeDir(t), a)
	back, err := Open(s.Dir())
	if err != nil || !back.Root().Attestation().OK {
		t.Fatalf("reopened: %v %+v", err, back.Root().Attestation())
	}

	bad := append([]byte{}, cdh...)
	bad[0] ^= 1
	other := webauthnEntry(t, softkey.NewWebAuthn())
	for what, tc := range map[string]struct {
		a    Authenticator
		e    Attestation
		want string
	}{
		"another client data hash": {webauthnEntry(t, k), Attestation{Format: "packed", Statement: obj, ClientDataHash: bad}, "statement"},
		"another credential":       {other, Attestation{Format: "packed", Statement: obj, ClientDataHash: cdh}, "attests another credential"},
		"another format":           {webauthnEntry(t, k), Attestation{Format: "fido-u2f", Statement: obj, ClientDataHash: cdh}, "format"},
	} {
		if v := tc.a.Attest(&tc.e); v.OK || !strings.Contains(v.Why, tc.want) {
			t.Errorf("%s: %+v, want unattested with %q", what, v, tc.want)
		}
	}
}

// TestBundledRootsParse: every bundled vendor root parses and is a CA.
func TestBundledRootsParse(t *testing.T) {
	roots, err := bundledRoots()
	if err != nil || len(roots) < 4 {
		t.Fatalf("bundled roots: %d, %v", len(roots), err)
	}
	for _, r := range roots {
		if !r.IsCA && r.Version == 3 {
			t.Errorf("bundled root %s is not a CA", r.Subject)
		}
	}
}
