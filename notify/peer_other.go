//go:build unix && !linux && !darwin

package notify

import "net"

// peerCred reports an unchecked peer: this package reads peer credentials
// only on Linux and macOS. Elsewhere the socket is protected only by its
// 0700 directory and 0600 mode, which keep other users from connecting on
// systems that honour socket file permissions.
func peerCred(*net.UnixConn) (Peer, error) {
	return Peer{UID: -1}, nil
}
