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
// A request already forwarded to the old child when it is stopped gets one
// JSON-RPC error (code -31001, message "server_restarted: …") and is never
// retried: a timeout is not proof that a write did not run. Late answers from
// a stopped child are dropped and logged. A child that exits on its own puts
// the host in state "down" (requests get -31002, server_unavailable) and is
// restarted after 100 ms, 200 ms, … 6.4 s (its grants end with its epoch,
// as on a rebuild); after Options.MaxCrashes quick
// exits in a row (each within QuickCrash of its start) the host stops
// trying until a build signal or mcpepoch restart.
//
// The first epoch of a session starts ready with its catalog unknown; the
// host fetches it (tools/list, private ids) once the client has sent
// notifications/initialized or completed server/discover.
//
// # Checks on every tools/call, in order
//
//  1. Grants (package grant): no grant → -31010 authorization_required; a
//     grant of an older epoch → -31011 authorization_stale (seed's JSON
//     shape in error.data). The check runs under the lock that switches
//     epochs, so a restart cannot slip a call past it.
//  2. Catalog: an unknown tool → -31005 unknown_tool; a tool whose
//     definition changed since the client was last given it → -31006
//     tool_changed; arguments that do not validate against the current
//     inputSchema → -31007 invalid_arguments; both with the current
//     definition in error.data.tool.
//
// Annotations (readOnlyHint …) decide nothing.
//
// # Protocol eras
//
// Handshake era (2024-11-05 … 2025-11-25): the client's initialize is
// replayed to each new child and notifications/initialized follows; a
// child that negotiates another protocolVersion closes the connection.
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
//
// # Streams
//
// Messages pass byte for byte in both directions; the host reads only the
// envelope (id, method). It rewrites one message: the initialize result,
// which always advertises capabilities.tools.listChanged = true, because
// the host sends notifications/tools/list_changed on every epoch change. Its
// own requests to a child use string ids starting with "mcpepoch:", a
// namespace clients may not use. Nothing but MCP messages is written to the
// host's stdout; logs go to stderr, prefixed "mcpepoch host:".
package host
