// Package host is the gateway the agent's MCP client launches instead of the
// server (mcpepoch host -- CMD…): it runs the server as a child process,
// gives every launch a fresh execution epoch, and replaces the child when a
// rebuild changed the code, without ever letting a call silently reach code
// it was not prepared for.
//
// # State machine (seed: "compose the update contract")
//
//	ready(epoch A, catalog r)            requests are forwarded to the child
//	  │ build signal; recomputed identity differs
//	  ▼
//	identity-pending(epoch B, catalog ?)  old child stopped, new one started;
//	  │ initialize replayed, tools/list    requests are held, not forwarded
//	  ▼
//	catalog-ready(epoch B, catalog r')   catalog fetched; list_changed sent
//	  │
//	  ▼
//	ready(epoch B, catalog r')           held requests released in order
//
// A request already forwarded to the old child is given Options.Drain
// (host.drain, 3 s) to be answered, and its answer is delivered as it is,
// recorded under the old epoch (restart.go); one still unanswered then gets
// one JSON-RPC error (code -31001, message "server_restarted: …"), sent
// after the restart's list_changed, and is never retried: a timeout is not
// proof that a write did not run. Late answers from a stopped child are
// dropped and logged. A server that does not answer the client's
// initialize within Options.InitTimeout, or frames its messages with
// Content-Length headers, is named in a -31002 answer to it, and status
// says starting until a server answered (handshake.go). A child that exits on its own
// puts the host in state "down"; its grants end with its epoch, as on a
// rebuild. After exit status 0 (an idle exit) the next request starts it
// again; after a crash it is restarted after 100 ms, 200 ms, … 6.4 s,
// requests held meanwhile; after Options.MaxCrashes quick exits in a row
// (each within QuickCrash of its start) the host gives up until a build
// signal, mcpepoch restart or a change to a hashed file, and requests get
// -31002 server_unavailable (recover.go).
//
// The first epoch of a session starts ready with its catalog unknown; the
// host fetches it (tools/list, private ids) once the client has sent
// notifications/initialized or completed server/discover.
//
// # Checks on every tools/call, in order
//
//  1. Audit log (auditlog.go): while the log cannot be written → -31020
//     audit_unavailable; no action without its audit record: the call is
//     forwarded once its tool_called record is in the file (its fsync
//     follows, grouped), and refused the same way if it cannot be. Other
//     client requests that run server code (resources/read, prompts/get,
//     completion/complete, resources/subscribe, logging/setLevel…) pass
//     this check alone, with request_forwarded (requests.go); no grant.
//  2. Grants (package grant): no grant → -31010 authorization_required; a
//     grant of an older epoch → -31011 authorization_stale (seed's JSON
//     shape in error.data). A grant covers the definitions the person
//     reviewed: a tool the server redefined within the epoch since the
//     approval is -31010 with error.data.definitionChanged. error.data.action
//     says what a person should do, never a command that approves. The check runs under the lock that switches
//     epochs, so a restart cannot slip a call past it. A call a grant
//     covers is checked further: the server's process image against the
//     one read after its first message (image.go: an exec in place →
//     -31011 in_process_reload and a new epoch), then held while a change
//     under a hashed tree leaves the epoch's identity unverified, until it
//     is computed again (identity.go: drifted → -31011 identity_drift; not
//     decided within 5 s → -31011 identity_unverified).
//  3. Catalog: an unknown tool → -32602 (the spec's code, as servers
//     answer) with reason unknown_tool in error.data, once a re-list of
//     the server (which may add tools at runtime) does not show it; a tool
//     whose definition changed since the client was last given it → -31006
//     tool_changed, with the current definition in error.data.tool;
//     arguments that do not validate against the current inputSchema → a
//     tool result with isError true (MCP 2025-11-25: input validation
//     errors go back to the model), the reason invalid_arguments and the
//     current definition in its _meta["io.github.mcpepoch/refusal"].
//
// Annotations (readOnlyHint …) decide nothing.
//
// # Protocol eras
//
// Handshake era (2024-11-05 … 2025-11-25): the client's initialize is
// replayed to each new child and notifications/initialized follows, then
// the client's logging/setLevel and resources/subscribe requests, in the
// order it sent them; a child that negotiates another protocolVersion
// closes the connection. JSON-RPC batches (2025-03-26) are refused whole
// with -32600.
// Stateless era (2026-07-28): server/discover passes through (rewritten to
// advertise tools.listChanged), the client's _meta is reused on the host's
// own requests, subscriptions/listen requests are re-sent to each new child
// under the client's own id (its duplicate acknowledgement swallowed), and
// list_changed is sent once per listen, tagged with its subscription id.
// tools/list results carry ttlMs 0 so no client caches a catalog across an
// epoch change.
//
// # Identity
//
// The host computes the identity of what it launches itself, with package
// build, at every launch. The build hook's signal only makes it look again;
// the manifest and the server's own statements are never taken as identity.
// The code and dependency trees in it are kept current from file-system
// notifications (identity.go, package internal/treewatch): a tree is walked
// again only when a notification named a path in it, or when
// notifications cannot be trusted for it.
//
// # Streams
//
// Messages pass byte for byte in both directions unless listed here; the
// host reads the envelope (id, method) and, for tools/call, the tool name
// and arguments (package internal/jsonrpc reads client messages strictly).
// It rewrites only the member it must, keeping every other byte as the
// peer wrote it (internal/jsonrpc SetMember), and never escapes <>& in
// what it writes itself:
//
//   - initialize and server/discover results: listChanged is true for
//     each of tools, prompts and resources the server declared, because
//     the host sends notifications/tools/list_changed on every epoch
//     change and the prompts and resources ones when those lists changed
//     (catalog.go); a capability the server did not declare is not added,
//     and a server without tools gets no catalog fetch;
//   - tools/list results in the 2026-07-28 era: ttlMs 0;
//   - notifications/subscriptions/acknowledged of a listen that asked for
//     tools list_changed: toolsListChanged true;
//   - the ids of server→client requests (sampling, roots, elicitation):
//     the client sees a host id, and its answer goes back under the
//     server's own id to the epoch that asked; the server's own
//     notifications/cancelled of such a request names the host id.
//
// Its own requests to a child use string ids starting with "mcpepoch:", a
// namespace clients may not use. Nothing but MCP messages is written to the
// host's stdout; logs go to stderr, prefixed "mcpepoch host:" and the local
// time (15:04:05.000).
//
// # One build event, file by file
//
//  1. The build hook (mcpepoch record) asks the host for its current
//     trees (identity.go serveTrees), so as not to walk them itself, writes
//     the manifest and sends build_complete over the host's socket
//     (packages notify, localapi).
//  2. api.go serveBuild starts recomputing what the launch command runs
//     (identity.go identityAhead, package build), records the hook's claim
//     (build_recorded) meanwhile and calls restart.
//  3. restart.go restart takes restartMu and waits for that identity
//     (computed afresh, identity.go identity, when another restart held it);
//     decideLocked compares it with the running epoch's: unchanged or
//     held (restart mode manual) ends here.
//  4. identityPendingLocked enters identity-pending: from now client.go
//     holds client messages; grants.go revokeEpochLocked ends the
//     old epoch's grants, keeping what they covered for a renewal
//     (grants.go); the audit log gets server_replaced.
//  5. restart.go drainOld waits up to Options.Drain for the old child's
//     answers to requests in flight, passing them on, then child.go
//     abortLocked answers the rest with server_restarted (held until
//     list_changed); stopOld stops the old process group (child.go
//     stop); restart mode close ends the connection here. With
//     Options.DrainDuring both run beside steps 6 to 8.
//  6. startPending starts the new child (child.go start, child.go
//     startChild, the execution record) and carries the session over:
//     the client's initialize replayed (reinitialize, server.go
//     privateCall) or its subscriptions/listen re-sent.
//  7. catalogReady lists the tools (catalog.go fetchCatalog) and compiles
//     them for checks (catalog.go): catalog-ready, catalog_published;
//     grants.go prepares the renewal of the ended grants against it
//     (renewal_prepared), what approve, dev and the page offer first.
//  8. readyLocked enters ready (unless another restart is queued: the
//     held requests wait for the epoch it leaves running): the client gets
//     notifications/tools/list_changed (queue.go writes it), then the
//     server_restarted errors of step 5, then each held request passes client.go forwardLocked: grants first
//     (grants.go authorizeLocked), then the catalog (catalog.go).
//  9. api.go outcome answers the hook "restarted" with both epochs; the
//     hook prints its build line.
//
// # Credentials
//
// credentials.go gives each epoch of a project that declares a credential
// scope its own broker socket (package credbroker), and each tools/call it
// forwards there a token of that call in params._meta (bindCallLocked); it
// answers a request with the secret (package credsource reads it) only for
// the epoch's server or a descendant, with the token of a call in flight
// whose tool uses the scope under a live grant naming it; every answer is
// audited as that call's, never with the value.
//
// # Approvals: who proved what
//
// A grant counts only at a proof level mcpepoch.toml's [grants] proof
// accepts. Package approval decides what each channel's answer proves
// (its rules.go, and a file per channel: terminal.go for mcpepoch
// approve, the socket's peer examined by the process table; client.go
// for a form accepted in the MCP client; web.go and ssh.go for presence
// signatures); the host keeps what needs a running host and calls it for
// every decision: presence.go serves the WebAuthn approval page (package
// ceremony) on first need and presence_ssh.go verifies SSHSIGs of FIDO
// ssh keys (package sshsig), both over a grant.Proposal's digest, which
// covers the audit head; trust.go reads the trust store at start and pins
// its digest. approve.go grantFor makes every grant, so every channel
// meets the same checks (running epoch and catalog, scopes, proof) and
// writes approval_granted or approval_refused. A call that needs a grant,
// from a client that declared elicitation, is held while the host asks the
// person through the client (elicit.go: a url elicitation pointing at the
// approval page, a form, or input_required in the 2026-07-28 era), up to
// [grants] approval_wait; every grant releases the held calls it covers.
//
// Which goroutine owns what, and what the locks guard: below, "Goroutines
// and locks of a Host".
package host

// Goroutines and locks of a Host.
//
// # Goroutines, in start order (Run stops them in the reverse order)
//
//  1. The audit writer (auditlog.go): appends what the host decided, in
//     the order it was decided, when the goroutine that decided it did
//     not (a tools/call's record is written by the goroutine that
//     forwards it), and syncs what was written, in groups. Closed last:
//     after it, nothing records.
//  2. The client writer (queue.go, h.out): writes the client's stdout.
//     Closed after the child is stopped and the run is ended, with up to
//     a second to flush.
//  3. Per epoch, the child's goroutines (child.go, child.go): its
//     stdin writer, its stdout reader (calls fromChild), its reaper
//     (calls childExited), and the host's guard process watches its
//     group from start to stop (childproc.Guard, one per host, started
//     with the first child and stopped at the end of Run: it kills the
//     groups it still watches if the host dies); around them the
//     crash recovery loop (recover.go recover), the start after an idle
//     exit (wakeLocked), the one-time /proc observation, the process
//     tree watch of allow_self_reload (selfreload.go watchTree, ends
//     with the child), its credentials broker (credentials.go: the
//     socket's accept loop and one goroutine per request, until the child
//     is reaped or h.ctx ends; a request takes h.mu to decide and again
//     to hand over, never while a source is read), and the catalog fetches (at most one re-list after
//     a server's list_changed runs; a restart cancels it first, before it
//     takes restartMu). Stopped by stopChild, which takes restartMu so
//     that no restart is half done. Once the host gave up on a server,
//     watchWhileDown looks at the hashed files every second until a
//     restart succeeds or h.ctx ends. The orphan reaper of a subreaper
//     host (childproc.BecomeSubreaper) is process-wide and outlives Run.
//  4. The socket server (notify.Listener.Serve with api.go's handlers):
//     build signals, restart, status, review, approve, revoke. It stops
//     accepting when h.ctx ends, and Run waits until its handlers have
//     returned before it stops the child: every socket request finishes
//     before the audit writer closes.
//     The manifest watch (signal.go) starts with it: a new build
//     id in the run manifest is a build signal. So does the revoke watch
//     (revokefile.go): a request file for a live grant ends it. Run waits
//     for both to end with h.ctx, before the child is stopped.
//     The tree watcher (identity.go, package treewatch) starts before the
//     first child and reads file notifications on the identity's trees;
//     Run closes it after the socket server's handlers returned.
//     Per approval asked through the client (elicit.go), runAsk opens
//     the page, asks, and waits for the page, the client's answer,
//     approval_wait or the ask's end (an epoch change, a grant, the
//     client's cancellation), each handled under h.mu; it ends with h.ctx.
//  5. The client reader (readLinesMore on stdin, calls fromClient): ends
//     the host when stdin closes. A read cannot be interrupted, so Run
//     does not wait for it; what it reads after the child is stopped is
//     answered server_unavailable and records nothing.
//
// # Locks
//
// restartMu orders what replaces or re-lists the child: restart, the
// first catalog fetch, re-lists after a server's own list_changed, crash
// recovery and stopChild. It is held across slow work (identity,
// stopping a process group, tools/list) and is always taken before h.mu.
//
// h.mu guards four of the groups of Host's fields (host.go, where each
// group names its lock): the session with the client, the child and its
// epoch (the state machine and the server side), the catalog, and grants
// and approval waits with the grants policy and what the host knows of
// mcpepoch.toml (policy, config: configwatch.go reads the file before
// taking it). The client and server writers, the audit writer, the log,
// presence, the guard and the watchers have locks of their own. Every
// client and server message takes h.mu, so it is held only to decide and
// to queue:
//
//   - Never block under h.mu: no read of a file another process can
//     replace (the manifest, /proc: Status reads them after releasing
//     it), no wait on a peer (a child's answer, the socket, a process
//     exit), no restartMu. One file is read under it: the audit log's
//     head, when a renewal is prepared (grants.go), through
//     safefile (regular files only, opened non-blocking, 4 KiB at most),
//     so that the renewal's proposal names the head as its
//     renewal_prepared record is queued; audit.Log.Head would wait on
//     the writer's fsync instead.
//   - Writes under h.mu go to queues that never block: toClient
//     (h.out), child.send (the child's stdin queue) and h.audit. The
//     order they are queued in is the order the host decided, so the
//     audit log and the client see one sequence. One file write is made
//     under it: a tools/call's tool_called record, with what was queued
//     before it, appended by write(2) (audit.Log.TryWrite) when the
//     log's lock is at hand without waiting (this host holds it, or
//     no one does); otherwise the call waits in its child's stdin queue
//     for the audit writer, never under h.mu. A reader that has more
//     lines of one read to handle (the client's, a server's) stages what
//     it forwards on the queue instead (lineQueue.stage) and flushes once
//     after the last line, outside h.mu: one write(2) for the burst. A
//     push of any goroutine writes what is staged first, so the order
//     stays the order of decisions.
//   - The one file written under h.mu is the run's own grants file
//     (saveGrantsLocked: an atomic replace in a 0700 directory), so that
//     it never disagrees with the order of decisions.
//
// A child's observed and looked fields are guarded by h.mu; its other
// fields are set before it is shared and never change.
