//go:build unix

package audit

import (
	"os"
	"syscall"
)

// noFollow makes opening the log or its lock fail on a symbolic link
// instead of appending through it to wherever it points.
const noFollow = syscall.O_NOFOLLOW

// fileID is the device and inode of an open log file, read once when it
// is opened: they do not change while it is open, so comparing them with
// what a path names needs one stat of the path and no fstat.
type fileID struct {
	dev, ino uint64
	ok       bool // read; false where the platform has no inode
}

// idOf returns the identity of the file fi describes.
func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), ok: true}
}

// unchanged reports whether the open log file id is still the one at path
// and has size bytes: one stat, without the allocations of os.Stat (a
// step's catch-up asks it every time).
func unchanged(id fileID, path string, size int64) bool {
	var st syscall.Stat_t
	if !id.ok || syscall.Stat(path, &st) != nil {
		return false
	}
	return uint64(st.Dev) == id.dev && uint64(st.Ino) == id.ino && st.Size == size
}

// stillNamed reports whether path itself, as Lstat sees it (a symbolic
// link is not the file), is the open log file id; known is false when
// that cannot be told this way (then the caller compares os.FileInfo).
func stillNamed(id fileID, path string) (same, known bool) {
	return namedWithSize(id, path, -1)
}

// namedWithSize is stillNamed that also wants the file to have size
// bytes (any size when size is negative): one lstat, no fstat, as a head
// rewritten in place asks before each pwrite.
func namedWithSize(id fileID, path string, size int64) (same, known bool) {
	var st syscall.Stat_t
	if !id.ok {
		return false, false
	}
	if syscall.Lstat(path, &st) != nil {
		return false, true
	}
	return uint64(st.Dev) == id.dev && uint64(st.Ino) == id.ino && (size < 0 || st.Size == size), true
}
