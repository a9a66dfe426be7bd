// Package jsonrpc reads and writes JSON-RPC 2.0 envelopes, one message per
// line, as the MCP stdio transport carries them: the id, the method and
// whether a result or an error is present. It never reads past the
// envelope (params and results stay raw bytes) and holds no state.
//
// Two readers exist because the two peers are trusted differently:
//
//   - [Parse] reads a server's line leniently with encoding/json (the host
//     only routes it).
//   - [ParseClient] reads a client's line strictly (JSON-RPC 2.0 §4, §5):
//     member names match exactly, a member that is read appears once and in
//     no other case, ids are strings, integers of at most 2^53 or null,
//     and tools/call params name a tool. A line the host could read
//     differently from the server is refused with a [*ProtocolError].
//
// Ids are compared by value with [IDKey] ("\u0041" is "A", 1.0 is 1,
// "1" is not 1). [ErrorLine], [ResultLine] and [RequestLine] encode
// newline-terminated lines; they panic only on values that cannot be
// marshalled, which callers never pass.
package jsonrpc
