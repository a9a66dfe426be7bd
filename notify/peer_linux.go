package notify

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the credentials the kernel recorded when the peer of c
// connected (SO_PEERCRED, see unix(7)).
func peerCred(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{UID: -1}, err
	}
	var (
		cred *unix.Ucred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{UID: -1}, err
	}
	if cerr != nil {
		return Peer{UID: -1}, cerr
	}
	return Peer{UID: int(cred.Uid), PID: int(cred.Pid), Checked: true}, nil
}
