package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/trust"
)

// refuseUncountable refuses, before any screen or question, an approval
// that cannot count: the proof it would give (terminal, for a person at a
// terminal) is not one the host says the project counts
// (localapi.Review.Proof). It decides only when the review's list
// is exact for every grant (no credential scope with a proof list of its
// own); otherwise the host decides after the review.
func refuseUncountable(reviews []localapi.Review, got approval.Proof, how string) error {
	for _, rv := range reviews {
		if mayCount(rv, got) {
			continue
		}
		return &exitError{code: exitHostError,
			err: fmt.Errorf("agent run %s: %s proves only %s, and this project counts only %s as a person's approval",
				printable(string(rv.AgentRun)), how, got, rv.Proof),
			hints: approveHints(rv.Proof)}
	}
	return nil
}

// mayCount reports whether an approval proven at got may count at the
// host of review rv: false only when the review says for certain that
// it does not.
func mayCount(rv localapi.Review, got approval.Proof) bool {
	return len(rv.Proof) == 0 || len(rv.ScopeProof) > 0 || rv.Proof.Counts(got)
}

// approveHints names the ways of approving that count under need.
func approveHints(need approval.Proofs) []string {
	var out []string
	if got := approval.ProofTerminal; need.Counts(got) {
		out = append(out, "a person runs "+selfcmd.Name()+" approve in their own terminal")
	}
	if need.Counts(approval.ProofClient) {
		out = append(out, "a person accepts the request in the MCP client")
	}
	return append(out, "approve with an enrolled authenticator: "+selfcmd.Name()+" approve --web, or "+selfcmd.Name()+" approve --ssh KEY with an sk- key ("+selfcmd.Name()+" enroll --web or --ssh KEY.pub enrolls one)")
}

// sshKeyType returns the type of the OpenSSH key at path, a private key
// or a public one (KEY.pub), without needing its passphrase: the public
// half beside a private key (KEY.pub) when there is one.
func sshKeyType(path string) (string, error) {
	pub := path
	if !strings.HasSuffix(path, ".pub") {
		if _, err := os.Stat(path + ".pub"); err == nil {
			pub = path + ".pub"
		}
	}
	b, err := os.ReadFile(pub)
	if err != nil {
		return "", err
	}
	if pk, _, _, _, err := ssh.ParseAuthorizedKey(b); err == nil {
		return pk.Type(), nil
	}
	k, err := ssh.ParsePrivateKey(b)
	var pm *ssh.PassphraseMissingError
	switch {
	case err == nil:
		return k.PublicKey().Type(), nil
	case errors.As(err, &pm) && pm.PublicKey != nil:
		return pm.PublicKey.Type(), nil
	}
	return "", fmt.Errorf("%s: not an OpenSSH key (%v)", pub, err)
}

// refusePlainSSHKey refuses, before anything is signed, a key that is not
// an sk- (FIDO) key: it signs without a touch, so it never proves presence.
func refusePlainSSHKey(path string) error {
	t, err := sshKeyType(path)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--ssh %s: %v", path, err)}
	}
	if t == trust.SSHKeyEd25519 || t == trust.SSHKeyECDSA {
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("--ssh %s: a key of type %s: a plain key never proves presence", path, t),
		hints: []string{"approve with an sk- key (ssh-keygen -t ed25519-sk) enrolled with " + selfcmd.Name() + " enroll --ssh KEY.pub, or with " + selfcmd.Name() + " approve --web"}}
}

// isPrivateKey reports whether b is a PEM private key (OpenSSH's, PKCS#1,
// PKCS#8 …), which the person meant to give as its public half.
func isPrivateKey(b []byte) bool {
	head, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.HasPrefix(head, "-----BEGIN ") && strings.Contains(head, "PRIVATE KEY")
}
