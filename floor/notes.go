package floor

import (
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/trust"
)

// NoAuthenticatorNote is the one line said wherever the policy in force
// counts only presence while the trust store holds no authenticator: the
// host's log, record and dev (the build answer's Policy lines), doctor.
// A first enrollment needs a person at their own terminal (enroll's first
// enrollment rule); the host pins the store at start, so it counts the
// new authenticator once it starts again.
func NoAuthenticatorNote() string {
	return "proof = presence but no authenticator is enrolled: every approval will be refused; " +
		"enroll one with " + selfcmd.Name() + " enroll --ssh KEY.pub (or --web) at your own terminal, a first enrollment, and start the host again"
}

// OnlyPresence reports whether the proof list p counts presence and no
// other level.
func OnlyPresence(p approval.Proofs) bool {
	for _, l := range p {
		if l != approval.ProofPresence {
			return false
		}
	}
	return len(p) > 0
}

// Strictest is the floor used when the project's floor file cannot
// be read or went missing: strictest in every field — presence only, by
// an attested authenticator (attestation = "required"), nothing exempt,
// no self-reload, and each credential scope of cfg per call with
// presence, delivered through the broker, and the identity covering the
// most (trust.StrictestIdentity) — so that a damaged or deleted file never
// opens the policy.
func Strictest(root string, cfg *config.Config) trust.Floor {
	presence := []string{string(approval.ProofPresence)}
	f := trust.Floor{V: 1, Root: root, Proof: presence, Exempt: []string{}, Attestation: config.AttestationRequired, Identity: trust.StrictestIdentity(cfg)}
	for name, c := range cfg.Credentials {
		if f.Credentials == nil {
			f.Credentials = map[string]trust.CredentialFloor{}
		}
		f.Credentials[name] = trust.CredentialFloor{Tools: slices.Clone(c.Tools), PerCall: true, Proof: presence, Deliver: config.DeliverBroker}
	}
	return f
}

// WeakNote is the one line that names what is not in force, for the log,
// status and refusals. The command it names lifts nothing by itself:
// mcpepoch policy accept takes a person, proven at the floor's level.
func WeakNote(weak []trust.Weakening) string {
	s := make([]string, len(weak))
	for i, w := range weak {
		s[i] = w.String()
	}
	return config.FileName + " weakens the project's policy floor, not applied: " + strings.Join(s, "; ") +
		"; only a person can accept the change, with " + selfcmd.Name() + " policy accept"
}

// Text is f in words for the host's log: its proof list (the default
// in force when it sets none) and what it exempts.
func Text(f trust.Floor, enrolled bool) string {
	proof := approval.DefaultProofText(enrolled)
	if f.Proof != nil {
		proof = approval.ParseProofs(f.Proof).String()
	}
	return "proof " + proof + ", exempt [" + strings.Join(f.Exempt, ", ") + "]"
}
