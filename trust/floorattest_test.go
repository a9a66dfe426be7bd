package trust

import (
	"testing"

	"github.com/mcpepoch/mcpepoch/config"
)

// grants.attestation is part of the floor: "required" dropped (or set to
// "optional") is a weakening held at the floor; "required" added raises it.
func TestFloorAttestation(t *testing.T) {
	required := FloorOf("/p", &config.Config{Grants: config.Grants{Attestation: config.AttestationRequired}})
	for _, file := range []string{"", config.AttestationOptional} {
		eff, _, weak := required.Reconcile(&config.Config{Grants: config.Grants{Attestation: file}}, true)
		if len(weak) != 1 || weak[0].Setting != "grants.attestation" || eff.Grants.Attestation != config.AttestationRequired {
			t.Errorf("file attestation %q over a required floor: weak %v, in force %q", file, weak, eff.Grants.Attestation)
		}
	}
	unset := FloorOf("/p", &config.Config{})
	eff, next, weak := unset.Reconcile(&config.Config{Grants: config.Grants{Attestation: config.AttestationRequired}}, true)
	if len(weak) != 0 || eff.Grants.Attestation != config.AttestationRequired || next.Attestation != config.AttestationRequired {
		t.Errorf("required over an unset floor: weak %v, in force %q, floor %q", weak, eff.Grants.Attestation, next.Attestation)
	}
}
