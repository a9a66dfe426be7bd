//go:build linux

package treewatch

import (
	"io/fs"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// notifications: Linux has inotify, one watch per directory.
const notifications = true

// localFSNames are the file systems whose local changes inotify reports,
// by statfs magic number (linux/magic.h).
var localFSNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	0x2fc12fc1:                 "zfs",
}

// localFS returns the name of the file system p is on and whether its
// changes send inotify notifications.
func localFS(p string) (string, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return "unknown (" + err.Error() + ")", false
	}
	if name, ok := localFSNames[int64(st.Type)]; ok {
		return name, true
	}
	return "0x" + strconv.FormatInt(int64(st.Type), 16), false
}

// device returns the device number of fi's file.
func device(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
