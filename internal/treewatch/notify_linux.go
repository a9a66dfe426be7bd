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

// links is fi's link count: how many names the file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
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

// mountWatch keeps /proc/self/mountinfo open: poll(2) reports POLLPRI on
// it once for each change of the mount namespace since it was opened or
// last reported (proc(5), "/proc/pid/mounts ... is pollable"), so that an
// unchanged table costs one system call rather than a read of all of it.
// fd is 0 before the first call, -1 once closed.
type mountWatch struct{ fd int }

// changed reports whether the mount table may have changed since the last
// call: true on the first, which opens the file before the caller reads
// the table, and whenever the file cannot be polled.
func (m *mountWatch) changed() bool {
	switch {
	case m.fd < 0:
		return true
	case m.fd == 0:
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			m.fd = fd
		}
		return true
	}
	fds := []unix.PollFd{{Fd: int32(m.fd), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) != 0
}

func (m *mountWatch) close() {
	if m.fd > 0 {
		unix.Close(m.fd)
	}
	m.fd = -1
}

// readMountFile returns the contents of a mount table file, ok false when
// it cannot be read.
func readMountFile(p string) (string, bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	return string(b), true
}
