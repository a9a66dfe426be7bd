package main

import (
	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/checkup"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/trust"
)

// policyProblems is what doctor says of the project's approval policy as
// a host would find it at start (loadPolicy, which reads the audit log
// with floor.MissingNote): the policy floor or the trust root gone missing,
// and a policy that counts only presence while no authenticator is
// enrolled, so that every approval would be refused. A floor or store
// that cannot be read is left to the host and mcpepoch policy, which say
// why.
func policyProblems(root string) []checkup.Problem {
	st, err := loadPolicy(root)
	if err != nil {
		return nil
	}
	var out []checkup.Problem
	if st.missing != "" {
		out = append(out, checkup.Problem{Where: trust.FloorPath(st.store.Dir(), st.root), What: st.missing,
			Fix: "restore the config directory, or accept the policy as a person: " + acceptHow(approval.Proofs{approval.ProofPresence})})
	}
	if len(st.store.Authenticators) == 0 && (onlyPresence(st.floor, st.enrolled) || floor.OnlyPresence(approval.ParseProofs(st.cfg.Grants.Proof))) {
		out = append(out, checkup.Problem{Where: "[grants] proof", What: floor.NoAuthenticatorNote(),
			Fix: "a person runs " + selfcmd.Name() + " enroll --ssh KEY.pub (or --web) in their own terminal"})
	}
	return out
}

// onlyPresence reports whether the floor f (nil: none yet) counts only
// presence.
func onlyPresence(f *trust.Floor, enrolled bool) bool {
	return f != nil && floor.OnlyPresence(floorProof(f, enrolled))
}
