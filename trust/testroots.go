//go:build mcpepochtest

package trust

import (
	"crypto/x509"
	"encoding/pem"
	"os"
)

// In a binary built with -tags mcpepochtest (the e2e tests' build), the
// PEM certificates in the file MCPEPOCH_TEST_ATTESTATION_ROOTS names are
// trusted as attestation roots too: the tests' own CA, and the root of
// Chromium's virtual authenticator. A product build has no such seam.
func init() {
	b, err := os.ReadFile(os.Getenv("MCPEPOCH_TEST_ATTESTATION_ROOTS"))
	if err != nil {
		return
	}
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			testRoots = append(testRoots, c)
		}
	}
}
