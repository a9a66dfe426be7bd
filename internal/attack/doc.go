// Package attack runs the attacks on mcpepoch's guarantees the way an
// agent would run them, against real hosts: its tests are the package.
//
// The agent runs shell commands in the project as a child of the MCP
// client (the test process, which launched every host), as a coding
// agent's shell tool does. Each attack runs confined as Claude Code and
// Codex confine an agent, with bubblewrap: the project and a temp
// directory of its own writable, the rest of the file system read-only
// (the user's config and state directories with it: the trust store,
// the policy floors, the copy of the audit head), no network, no
// capabilities, a session of its own. Where the result differs, it runs
// unconfined too (a shell of the same user), and the test says what
// differs. The agent's own program (a raw socket request, a rewritten
// hash chain, a scan of /proc) is the test binary, run as the agent's
// tool. A person is a terminal of their own: script in a session setsid
// detached from the test process, answering y.
//
// Each scenario, and what must happen:
//
//   - Approve by itself (TestApproveByItself): mcpepoch approve --yes, mcpepoch
//     approve through a faked terminal (script -qc), and an approval written
//     to the host's socket claiming a terminal are refused as proving only
//     same-user, audited (approval_refused), and the call stays refused
//     naming mcpepoch approve; confined and unconfined alike (the socket is
//     reachable from the sandbox).
//   - A detached terminal (TestDetachedTerminalPasses), what still passes: a
//     pty the agent opens in a session it detaches (setsid -f script) is
//     reparented to PID 1 and counts as terminal, unconfined and confined
//     with the process table shared; in a PID namespace of its own (bwrap
//     --unshare-pid, as Claude Code's sandbox) it descends from the client
//     and is refused.
//   - Accept a weakening (TestPolicyAcceptWeakening): the agent's weaker
//     mcpepoch.toml is not applied, the call stays refused naming mcpepoch
//     policy accept; its policy accept --yes and through script -qc are
//     refused naming what a person does. From a detached terminal it is
//     accepted unconfined (the terminal level's limit); confined the floor
//     file is read-only and nothing is accepted; in a PID namespace it is
//     refused.
//   - Forge the floor (TestFloorForged): confined, removing or writing the
//     floor file fails, a trust_pinned line appended to the audit log leaves
//     it ahead of the copy of its head, audit verify exits 5 and the next
//     host refuses to start, naming mcpepoch audit verify. Unconfined, the
//     forged floor is taken: the limit (the user's own files).
//   - Rewrite the audit log (TestAuditRewritten): the log cut and chained
//     anew, with its head, verifies alone; confined, the copy of the head in
//     the state directory is out of reach and audit verify exits 5;
//     unconfined, the agent rewrites the copy too and verify exits 0: the
//     limit.
//   - Edit code under a grant (TestEditUnderGrant): with a file of the hashed
//     tree rewritten every 50 ms, new code saved and called at once is held
//     and refused identity_drift, naming mcpepoch record and restart; it
//     never runs under the approval.
//   - Exec in place (TestExecInPlace): the server execs a program from the
//     agent's temp directory, same pid and pipes; the next granted call is
//     refused in_process_reload, naming mcpepoch approve.
//   - Swap and restore (TestSwapRestore): a hashed file swapped after the
//     host hashed a launch and put back before its check: that epoch is not
//     used, and what the person approves next runs the original.
//   - Code the launch command does not name (TestEditOutsideTheEntry): a
//     module the root entry imports, and npm start's script, edited under a
//     grant: refused identity_drift.
//   - An uncovered launch (TestUncoveredLaunch): a server in the agent's
//     temp directory hashes no file of the project: the host refuses to
//     start, naming code = [...].
//   - An env credential (TestEnvCredentialNotInEnviron): no process's
//     /proc/PID/environ holds the secret while the server gets it from the
//     broker; unconfined the scan reads the host's and the server's.
//   - The broker (TestBrokerAskedByAgent): asked for a secret outside any
//     call and during a granted one, from the sandbox: wrong_process.
//   - Revoke (TestRevokeWithSlotsHeld): with every socket slot held from the
//     sandbox, a person's mcpepoch revoke ends the grant through its request
//     file; what still passes: an agent that also puts a file where the
//     requests' directory goes keeps the grant, and revoke fails saying so.
//   - The server run outside the gateway (TestServerOutsideGateway), what no
//     gateway stops: the agent runs the server's code itself, confined or
//     not; it answers with no grant and no audit record.
//   - Move the guards (TestClientConfigMovesNoGuard): the project's client
//     config sets XDG_CONFIG_HOME and XDG_STATE_HOME into the agent's temp
//     directory for the next host; the product build, run confined with
//     the account's home a directory of the test's, says it does not
//     follow them, keeps the floor and the copy of the audit head under
//     the account's home, and refuses to start on a floor and head copy
//     the agent forged where the variables point, naming mcpepoch audit
//     verify.
//
// A test that confines its agent needs bubblewrap (Linux): outside CI it
// is skipped when bwrap is missing, in CI it fails (internal/testenv Need).
// The package's tests run side by side; the suite takes about 10 seconds
// (docs/performance.md).
package attack
