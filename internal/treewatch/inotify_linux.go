//go:build linux

package treewatch

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// treeMask is what a directory of a watched tree reports: entries made,
// removed, renamed, written, closed after being opened for writing (a
// write through a shared mapping sends no IN_MODIFY) or with changed
// attributes, and the directory itself removed or renamed.
const treeMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotify is one inotify instance read without blocking: its events are
// read by whoever holds the Watcher's lock, the event loop when the kernel
// says some are queued, or sync, which so handles every event queued
// before it without waiting for anyone. Its methods are called with the
// Watcher's lock held.
type inotify struct {
	f    *os.File         // the instance, non-blocking, in the runtime's poller
	wds  map[int32]string // watch descriptor → the directory it watches
	buf  []byte
	mask uint32 // what each watch asks for
}

// openInotify opens an instance whose watches ask for mask (treeMask,
// dirMask).
func openInotify(mask uint32) (*inotify, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	return &inotify{f: os.NewFile(uintptr(fd), "inotify"), wds: map[int32]string{}, buf: make([]byte, 64<<10), mask: mask}, nil
}

// add watches the directory p (again, under its new name, if it was).
func (n *inotify) add(p string) error {
	wd, err := unix.InotifyAddWatch(n.fd(), p, n.mask)
	if err != nil {
		return &fs.PathError{Op: "inotify_add_watch", Path: p, Err: err}
	}
	n.wds[int32(wd)] = p
	return nil
}

func (n *inotify) fd() int { return int(n.f.Fd()) }

// drain reads every event queued now and calls event for each, with the
// path it names, whether it made that path (created, or moved there) and
// whether it is about a watched directory itself (removed, moved away or
// unmounted: self). It returns whether the kernel's queue overflowed
// (events were lost), and an error other than an empty queue.
func (n *inotify) drain(event func(name string, made, self bool)) (overflow bool, err error) {
	for {
		k, err := unix.Read(n.fd(), n.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return overflow, nil
		case err != nil:
			return overflow, os.NewSyscallError("read inotify", err)
		case k < unix.SizeofInotifyEvent:
			return overflow, errors.New("read inotify: short read")
		}
		for b := n.buf[:k]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := int(binary.NativeEndian.Uint32(b[12:]))
			if unix.SizeofInotifyEvent+size > len(b) {
				return overflow, errors.New("read inotify: truncated event")
			}
			name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size]), "\x00")
			b = b[unix.SizeofInotifyEvent+size:]
			if mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
				continue
			}
			dir, ok := n.wds[wd]
			if !ok {
				continue // a watch already removed
			}
			if mask&unix.IN_IGNORED != 0 {
				delete(n.wds, wd) // the directory is gone, or unmounted
				continue
			}
			p := dir
			if name != "" {
				p = dir + "/" + name
			}
			event(p, mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0, name == "" && mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0)
		}
	}
}

func (n *inotify) close() error { return n.f.Close() }
