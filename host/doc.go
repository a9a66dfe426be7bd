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
// a stopped child are dropped and logged. A child that exits on its own
// leaves the host in state "down": requests get -31002 until a build signal
// starts a new child.
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
