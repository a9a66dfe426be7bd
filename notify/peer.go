package notify

import "context"

// Peer describes the process at the other end of a connection, as the
// kernel reported it when that process connected.
type Peer struct {
	// UID is the peer's effective uid, or -1 when unknown.
	UID int
	// PID is the peer's process id, or 0 when unknown.
	PID int
	// Checked reports whether UID and PID come from the kernel: SO_PEERCRED
	// on Linux, LOCAL_PEERCRED and LOCAL_PEERPID on macOS. On other unix
	// systems it is false, UID is -1, PID is 0, and the only protection is
	// the 0700 directory and 0600 socket modes.
	Checked bool
}

// Handler answers one request. It runs on the connection's goroutine, so
// several may run at once for different connections; ctx is done when Serve
// returns. The Listener sets the response's V, fills Run with its run id
// when empty, and turns a response without Type, or a panic, into an error
// response with code CodeInternal. Handlers only see requests that passed
// Request.Validate from peers that passed the uid check.
type Handler func(ctx context.Context, peer Peer, req Request) Response
