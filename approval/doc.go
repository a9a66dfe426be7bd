// Package approval decides what a person's decision proves. A person
// decides through one of four channels, each judged here, in a file of
// its own; one file holds the rules they share:
//
//	rules.go     the proof levels (presence, terminal, client, same-user),
//	             what a proof list counts, the default list, how two lists
//	             combine; Proven, what a decision proved; what a person is
//	             told to do; the pinned trust store presence needs
//	terminal.go  an answer at a terminal (mcpepoch approve; enroll's first
//	             authenticator and policy accept judge themselves by the
//	             same rule, AtTerminal)
//	client.go    an ask through the MCP client: which mode, and what a
//	             form's accept proves
//	web.go       an assertion on the WebAuthn approval page
//	ssh.go       an SSHSIG by an enrolled FIDO ssh key
//	renewal.go   what a renewal offers of what ended grants covered
//
// The terminal and client channels decide from the process table: both
// rest on the MCP client found past the wrappers that launched a host
// (launch.go) and on one rule against every running host's launching side
// (apart.go).
//
// A grant records the level it was proven at (grant.Grant.Proof); a
// project's mcpepoch.toml and its policy floor name the levels that count
// (grant.Policy.Proof, trust.Floor.AcceptanceProof). The host keeps what
// needs a running host (the pages and proposals it holds, the calls held
// for a person, the grants it records) and calls this package for every
// decision; the local API's approve route runs the terminal rule on its
// sender before its handler (localapi.PermitPerson).
//
// Three packages stay outside, as the protocol, format and storage the
// channels rely on: ceremony serves the approval page and verifies the
// WebAuthn assertion, sshsig verifies the SSHSIG envelope, trust keeps
// the enrolled authenticators and the policy floor. They import grant
// (the proposal and digest a person signs), and grant imports the levels
// here, so this package cannot call them: the host (or the command) runs
// them, and the web and ssh channels judge what they verified. Merging
// them in would make this package the WebAuthn and SSH implementation as
// well, and every importer of the levels (grant, trust) would link
// go-webauthn.
package approval
