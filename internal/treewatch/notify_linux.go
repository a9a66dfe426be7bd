//go:build linux

package treewatch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// sweepBarriers removes the private directories of Watchers whose process
// is gone (a host killed with SIGKILL leaves its directory behind): those
// of this user, named for a pid that no longer exists.
func sweepBarriers() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), barrierPrefix+"*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), barrierPrefix), "-", 2)[0])
		if err != nil || pid <= 0 {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// mountTable returns the mounts of the host's mount namespace
// (/proc/self/mountinfo), ok false when it cannot be read.
func mountTable() (string, bool) { return readMountFile("/proc/self/mountinfo") }

// readMountFile returns the contents of a mount table file, ok false when
// it cannot be read.
func readMountFile(p string) (string, bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	return string(b), true
}
