// Package approval holds the rules of a person's decision: the proof
// levels (presence, terminal, client, same-user), which of them a proof
// list counts, the default list and how two lists combine (rules.go), and
// who stands for a person where the process table decides it.
//
// A grant records the level it was proven at (grant.Grant.Proof), a
// project's mcpepoch.toml and its policy floor name the levels that count
// (grant.Policy.Proof, trust.Floor.AcceptanceProof), and every channel a
// person decides through is judged by these rules.
//
// The process table decides for two channels: an answer at a terminal
// (terminal.go) and an accept in the MCP client (client.go). Both rest on
// the MCP client found past the wrappers that launched a host (launch.go)
// and on one rule against every running host's launching side (apart.go).
package approval
