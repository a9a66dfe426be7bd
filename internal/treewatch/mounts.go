package treewatch

// A mount over a watched file or directory (mount --bind evil.js
// dist/lib.js) changes what a path reads without a notification: inotify
// watches the inode underneath. So, where the platform lists its mounts
// (mountTable), the watcher reads the list at every sync and, when it
// differs from the last one, counts every tree as changed and watches it
// anew at its next walk. Reading the list costs a few kilobytes; it is
// read when a digest is asked for, never polled.

// checkMountsLocked marks every tree changed when the mount table differs
// from the last one read.
func (w *Watcher) checkMountsLocked() {
	m, ok := mountTable()
	if !ok {
		return
	}
	if w.mountsRead && m != w.mounts {
		w.logf("the mount table changed: the watched trees are walked again")
		w.markAllLocked(true)
	}
	w.mounts, w.mountsRead = m, true
}
