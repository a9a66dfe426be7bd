package treewatch

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// dirMask is what WatchDir asks inotify for: an entry made, moved in or
// out, removed, closed after writing or with changed attributes, and the
// directory itself removed or moved. Not IN_MODIFY: the directory watched
// (.mcpepoch) holds the audit log and its head, which stay open and are
// written on every call, and a write that is not a close would wake the
// watcher for nothing each time; the manifest is replaced by a rename,
// and a file edited in place is closed after writing.
const dirMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
	unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// WatchDir calls changed with the path of each entry of dir that was
// made, replaced, removed or written and closed, or with "" when events
// were lost (the kernel's queue overflowed: any entry may have changed),
// and gone once if dir itself goes away, from one goroutine, until ctx
// ends. It returns once watching, or an error when dir cannot be watched.
// It is the one-directory mode of the package, on the same inotify
// reader as a Watcher's trees; logf is not needed on Linux: a lost event
// is reported as a change.
func WatchDir(ctx context.Context, dir string, changed func(path string), gone func(), logf func(string, ...any)) error {
	in, err := openInotify(dirMask)
	if err != nil {
		return err
	}
	if err := in.add(dir); err != nil {
		in.close()
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	rc, err := in.f.SyscallConn()
	if err != nil {
		in.close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { in.close() })
	go func() {
		defer stop()
		defer in.close()
		// Read calls the function when the instance may have events,
		// until it returns true or the instance is closed (ctx's end).
		rc.Read(func(uintptr) bool {
			done := false
			overflow, err := in.drain(func(p string, _, self bool) {
				switch {
				case done:
				case self && p == dir:
					gone()
					done = true
				default:
					changed(p)
				}
			})
			if overflow && !done {
				changed("")
			}
			return done || err != nil
		})
	}()
	return nil
}
