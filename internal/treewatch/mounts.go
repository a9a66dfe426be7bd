package treewatch

// A mount over a watched file or directory (mount --bind evil.js
// dist/lib.js) changes what a path reads without a notification: inotify
// watches the inode underneath. So, where the platform lists its mounts
// (mountTable), the watcher checks the list at every sync and, when it
// differs from the last one, counts every tree as changed and watches it
// anew at its next walk. The list is read when a digest is asked for and
// the kernel says it may have changed since the last read (mountWatch),
// never polled on a timer.

// checkMountsLocked marks every tree changed when the mount table differs
// from the last one read.
func (w *Watcher) checkMountsLocked() {
	if !w.mountWatch.changed() && w.mountsRead {
		return
	}
	m, ok := mountTable()
	if !ok {
		return
	}
	if w.mountsRead && m != w.mounts {
		w.stats.Mounts++
		w.logf("the mount table changed (a mount or unmount on this machine may cover a watched file): the watched trees are walked again")
		w.markAllLocked(true)
	}
	w.mounts, w.mountsRead = m, true
}
