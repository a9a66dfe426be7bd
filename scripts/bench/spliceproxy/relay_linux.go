package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// relay moves bytes from src to dst, both pipes, with splice(2) on
// blocking descriptors until src ends.
func relay(dst, src *os.File) {
	d, s := int(dst.Fd()), int(src.Fd()) // Fd makes them blocking
	unix.FcntlInt(uintptr(d), unix.F_SETPIPE_SZ, 1<<20)
	unix.FcntlInt(uintptr(s), unix.F_SETPIPE_SZ, 1<<20)
	for {
		n, err := unix.Splice(s, nil, d, nil, 1<<20, unix.SPLICE_F_MOVE)
		if n <= 0 || err != nil {
			return
		}
	}
}
