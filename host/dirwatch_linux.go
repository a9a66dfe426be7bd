package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dirWatchMask is what watchDir asks inotify for: an entry made, moved in
// or out, removed, closed after writing or with changed attributes, and
// the directory itself removed or moved. Not IN_MODIFY: the directory
// watched (.mcpepoch) holds the audit log and its head, which stay open
// and are written on every call, and a write that is not a close would
// wake the watcher for nothing each time; the manifest is replaced by a
// rename, and a file edited in place is closed after writing.
const dirWatchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
	unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watchDir calls changed with the path of each entry of dir that was
// made, replaced, removed or written and closed, or with "" when events
// were lost (the kernel's queue overflowed: any entry may have changed),
// and gone once if dir itself goes away, from one goroutine, until ctx
// ends. It returns once watching, or an error when dir cannot be watched.
// logf is not needed here: a lost event is reported as a change.
func watchDir(ctx context.Context, dir string, changed func(path string), gone func(), logf func(string, ...any)) error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("inotify_init1", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, dirWatchMask); err != nil {
		unix.Close(fd)
		return fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: in the runtime's poller
	stop := context.AfterFunc(ctx, func() { f.Close() })
	go func() {
		defer stop()
		defer f.Close()
		buf := make([]byte, 16<<10)
		for {
			k, err := f.Read(buf)
			if err != nil {
				return // closed at ctx's end, or the instance failed
			}
			if dirEvents(buf[:k], dir, changed) {
				gone()
				return
			}
		}
	}()
	return nil
}

// dirEvents calls changed for each event in b, as watchDir says, and
// reports whether dir itself went away.
func dirEvents(b []byte, dir string, changed func(path string)) (gone bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:])
		size := int(binary.NativeEndian.Uint32(b[12:]))
		if unix.SizeofInotifyEvent+size > len(b) {
			return false
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size]), "\x00")
		b = b[unix.SizeofInotifyEvent+size:]
		switch {
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
			return true
		case mask&unix.IN_Q_OVERFLOW != 0:
			changed("")
		case name != "":
			changed(filepath.Join(dir, name))
		}
	}
	return false
}
