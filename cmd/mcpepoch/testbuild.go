//go:build mcpepochtest

package main

import "os"

// In a binary built with -tags mcpepochtest (internal/testenv builds the
// e2e tests' binary so), MCPEPOCH_TEST_PERSON=1 stands in for the person
// at a terminal that a first enrollment needs, so tests that need an
// enrolled authenticator can enroll one from a test process. A product
// build has no such seam; tests of the guard itself leave it unset.
func init() {
	testBuildPerson = func() bool { return os.Getenv("MCPEPOCH_TEST_PERSON") == "1" }
}
