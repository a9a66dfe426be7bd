package childproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Image is what is read of a process to tell whether it exec'd since
// (ReadImage): fields a platform does not read stay zero.
type Image struct {
	dev, ino uint64   // of the executable (Linux: /proc/PID/exe)
	args     string   // the command line: its words, NUL-separated
	exe      string   // the executable's path (macOS: kern.procargs2)
	auxv     [32]byte // SHA-256 of /proc/PID/auxv (Linux)
	hasAuxv  bool     // auxv could be read
}

// AuxvUnread reports whether the image was read where a process has an
// auxiliary vector (Linux) but the process kept it from being read (it
// made itself undumpable): an exec of the same program with the same
// arguments then does not show.
func (im Image) AuxvUnread() bool { return !im.hasAuxv && im.dev != 0 }

// ErrNoImage says the platform gives no view of a process image.
var ErrNoImage = errors.New("this platform gives no view of a process's executable image")

// ImageChange says how image now differs from was, in words, or "" when
// it does not. A part was could not read (an auxv the process made
// unreadable from the start) is not compared.
func ImageChange(was, now Image) string {
	switch {
	case was.dev != now.dev || was.ino != now.ino:
		return fmt.Sprintf("its executable is another file (device %d inode %d, was device %d inode %d)", now.dev, now.ino, was.dev, was.ino)
	case was.exe != now.exe:
		return fmt.Sprintf("its executable is %s, was %s", now.exe, was.exe)
	case was.args != now.args:
		return fmt.Sprintf("its command line is %q, was %q", strings.Split(now.args, "\x00"), strings.Split(was.args, "\x00"))
	case was.hasAuxv && (!now.hasAuxv || was.auxv != now.auxv):
		return "its auxiliary vector changed: it exec'd (the same program with the same arguments)"
	}
	return ""
}

// parseProcargs2 reads what sysctl kern.procargs2 returns for a process
// (macOS, xnu's sysctl_procargsx): argc as a native-endian int32, the
// executable's path, NUL padding, then argc NUL-terminated arguments
// (the environment follows, and is not read). ok is false for a buffer
// of another shape.
func parseProcargs2(b []byte) (exe, args string, ok bool) {
	if len(b) < 4 {
		return "", "", false
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 || argc < 0 {
		return "", "", false
	}
	exe, b = string(b[:i]), b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	words := make([]string, 0, argc)
	for range argc {
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return "", "", false
		}
		words = append(words, string(b[:j]))
		b = b[j+1:]
	}
	return exe, strings.Join(words, "\x00"), true
}
