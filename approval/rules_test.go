package approval

import "testing"

// TestProofsCountsEveryLevel asks every level against every proof list
// (each non-empty set of levels, in the order mcpepoch.toml may name
// them): a level counts where the list names it, everything counts where
// the list names same-user, and presence counts everywhere. want has one
// letter per level, presence, terminal, client, same-user, in that order,
// "-" where it does not count.
func TestProofsCountsEveryLevel(t *testing.T) {
	t.Parallel()
	levels := []Proof{ProofPresence, ProofTerminal, ProofClient, ProofSameUser}
	for _, tc := range []struct {
		list Proofs
		want string
	}{
		{Proofs{ProofPresence}, "P---"},
		{Proofs{ProofTerminal}, "PT--"},
		{Proofs{ProofClient}, "P-C-"},
		{Proofs{ProofSameUser}, "PTCS"},
		{Proofs{ProofPresence, ProofTerminal}, "PT--"},
		{Proofs{ProofPresence, ProofClient}, "P-C-"},
		{Proofs{ProofPresence, ProofSameUser}, "PTCS"},
		{Proofs{ProofTerminal, ProofClient}, "PTC-"},
		{Proofs{ProofTerminal, ProofSameUser}, "PTCS"},
		{Proofs{ProofClient, ProofSameUser}, "PTCS"},
		{Proofs{ProofPresence, ProofTerminal, ProofClient}, "PTC-"},
		{Proofs{ProofPresence, ProofTerminal, ProofSameUser}, "PTCS"},
		{Proofs{ProofPresence, ProofClient, ProofSameUser}, "PTCS"},
		{Proofs{ProofTerminal, ProofClient, ProofSameUser}, "PTCS"},
		{Proofs{ProofPresence, ProofTerminal, ProofClient, ProofSameUser}, "PTCS"},
		{DefaultProof(false), "PTC-"},
		{DefaultProof(true), "P---"},
	} {
		got := make([]byte, len(levels))
		for i, l := range levels {
			got[i] = '-'
			if tc.list.Counts(l) {
				got[i] = "PTCS"[i]
			}
		}
		if string(got) != tc.want {
			t.Errorf("[%v] counts %s, want %s", tc.list, got, tc.want)
		}
	}
}

func TestProofsCounts(t *testing.T) {
	for _, tc := range []struct {
		list Proofs
		got  Proof
		want bool
	}{
		{DefaultProof(false), ProofSameUser, false},
		{DefaultProof(false), ProofTerminal, true},
		{DefaultProof(true), ProofTerminal, false},
		{DefaultProof(true), ProofPresence, true},
		{Proofs{ProofTerminal}, ProofPresence, true},
		{Proofs{ProofSameUser}, ProofSameUser, true},
		{Proofs{ProofSameUser}, ProofTerminal, true},
		{Proofs{ProofClient}, ProofTerminal, false},
	} {
		if got := tc.list.Counts(tc.got); got != tc.want {
			t.Errorf("%v.Counts(%s) = %v, want %v", tc.list, tc.got, got, tc.want)
		}
	}
}
