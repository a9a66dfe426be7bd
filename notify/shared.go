package notify

import "net"

// The host's other sockets (the credentials broker) share what this
// package does for its own: the socket directory and the peer check.

// PeerOf returns the credentials the kernel recorded for the process at the
// other end of c when it connected: SO_PEERCRED on Linux, LOCAL_PEERCRED
// and LOCAL_PEERPID on macOS; elsewhere an unchecked Peer (see
// Peer.Checked).
func PeerOf(c *net.UnixConn) (Peer, error) { return peerCred(c) }
