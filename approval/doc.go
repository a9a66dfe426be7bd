// Package approval holds the rules of a person's decision: the proof
// levels (presence, terminal, client, same-user), which of them a proof
// list counts, the default list and how two lists combine (rules.go).
//
// A grant records the level it was proven at (grant.Grant.Proof), a
// project's mcpepoch.toml and its policy floor name the levels that count
// (grant.Policy.Proof, trust.Floor.AcceptanceProof), and every channel a
// person decides through is judged by these rules.
package approval
