package notify

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the credentials the kernel recorded when the peer of c
// connected (LOCAL_PEERCRED for the effective uid and LOCAL_PEERPID for the
// process id, see unix(4)).
func peerCred(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{UID: -1}, err
	}
	var (
		cred       *unix.Xucred
		pid        int
		cerr, perr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		pid, perr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return Peer{UID: -1}, err
	}
	if cerr != nil {
		return Peer{UID: -1}, cerr
	}
	if perr != nil {
		pid = 0 // the uid is what the check needs; the pid is informative
	}
	return Peer{UID: int(cred.Uid), PID: pid, Checked: true}, nil
}
