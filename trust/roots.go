package trust

import (
	"crypto/x509"
	"embed"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"
)

// roots/ holds the vendor attestation roots an attestation must chain to;
// roots/README.md says where each certificate was published.
//
//go:embed roots/*.pem
var rootFS embed.FS

// testRoots are roots trusted besides the bundled ones: set only by this
// package's own tests and, in a binary built with the test-only tag
// mcpepochtest, from MCPEPOCH_TEST_ATTESTATION_ROOTS (testroots.go). A
// product build has no way to add one.
var testRoots []*x509.Certificate

// bundledRoots parses roots/ once.
var bundledRoots = sync.OnceValues(func() ([]*x509.Certificate, error) {
	ents, err := rootFS.ReadDir("roots")
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, e := range ents {
		b, _ := rootFS.ReadFile(path.Join("roots", e.Name()))
		for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("trust: bundled root %s: %v", e.Name(), err)
			}
			out = append(out, c)
		}
	}
	return out, nil
})

// AttestationRoots returns the vendor roots attestations are checked
// against: the bundled ones (roots/), and in a test build the tests' own.
func AttestationRoots() ([]*x509.Certificate, error) {
	b, err := bundledRoots()
	if err != nil {
		return nil, err
	}
	return append(append([]*x509.Certificate(nil), b...), testRoots...), nil
}

// chainToRoot verifies that chain (leaf first, then intermediates, DER)
// ends at one of the attestation roots, as of when, and returns the root's
// subject.
func chainToRoot(chain [][]byte, when time.Time) (string, error) {
	if len(chain) == 0 {
		return "", errors.New("no certificate chain (self attestation)")
	}
	roots, err := AttestationRoots()
	if err != nil {
		return "", err
	}
	pool, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	var leaf *x509.Certificate
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return "", fmt.Errorf("certificate %d of the chain: %v", i, err)
		}
		if i == 0 {
			leaf = c
		} else {
			inter.AddCert(c)
		}
	}
	got, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: when,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return "", fmt.Errorf("chain of %q: %v", leaf.Subject.String(), err)
	}
	top := got[0][len(got[0])-1]
	return top.Subject.String(), nil
}
