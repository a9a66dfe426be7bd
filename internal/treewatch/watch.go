package treewatch

// Watching a tree: adding a watch for each of its directories, and the
// reasons a tree is walked on every call instead (see the package doc).

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// watch watches every directory of e's tree and its root's parent, or
// records why the tree is walked on every call instead.
func (w *Watcher) watch(e *entry) {
	why := ""
	if real, err := filepath.EvalSymlinks(e.root); err != nil || real != e.root {
		why = "its path goes through a symbolic link"
		if err != nil {
			why = err.Error()
		}
	} else if fsName, ok := localFS(e.root); !ok {
		why = "it is on a " + fsName + " file system, whose changes may send no notification"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if why == "" && !w.closed {
		if err := w.in.add(filepath.Dir(e.root)); err != nil {
			why = "watching " + filepath.Dir(e.root) + ": " + err.Error()
		}
	}
	if why == "" {
		e.watched = true
		why = w.addTreeLocked(e, e.root)
	}
	if why != "" {
		w.unwatchLocked(e, why)
	}
}

// unwatchLocked makes e a tree walked on every call, saying why once.
func (w *Watcher) unwatchLocked(e *entry, why string) {
	e.watched = false
	if e.why != why {
		e.why = why
		w.logf("%s is walked on every build: %s", e.root, why)
	}
}

// addTreeLocked watches dir, a directory of e's tree, and every directory
// below it that the tree does not skip. It returns why the tree cannot be
// trusted to notifications, or "".
func (w *Watcher) addTreeLocked(e *entry, dir string) string {
	var rootDev uint64
	if st, err := os.Lstat(e.root); err == nil {
		rootDev = device(st)
	}
	why := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile: its removal is a notification too
			}
			return err
		}
		rel, _ := relPath(e.root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if skipped(rel, e.opt) {
				return nil // a link by a skipped name is not walked (build.TreeOptions.SkipDirs)
			}
			if !linkInside(e.root, p) {
				why = "the symbolic link " + rel + " leads outside it"
				return filepath.SkipAll
			}
		case d.Type().IsRegular():
			if unlisted(p, e.opt) {
				return nil
			}
			if st, err := d.Info(); err == nil && links(st) > 1 {
				why = "the file " + rel + " has other names (hard links), and a write through another name sends no notification for this one"
				return filepath.SkipAll
			}
		case d.IsDir():
			if rel != "" && skipped(rel, e.opt) {
				return filepath.SkipDir
			}
			if st, err := d.Info(); err == nil && device(st) != rootDev {
				why = rel + " is another mount"
				return filepath.SkipAll
			}
			if err := w.addLocked(p); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				why = "watching " + p + ": " + err.Error() + " (see /proc/sys/fs/inotify/max_user_watches)"
				return filepath.SkipAll
			}
		}
		return nil
	})
	if err != nil && why == "" {
		why = err.Error()
	}
	return why
}

// addLocked watches the directory p.
func (w *Watcher) addLocked(p string) error {
	if w.maxWatches > 0 && w.watches >= w.maxWatches {
		return &fs.PathError{Op: "inotify_add_watch", Path: p, Err: syscall.ENOSPC}
	}
	if w.closed {
		return &fs.PathError{Op: "inotify_add_watch", Path: p, Err: fs.ErrClosed}
	}
	if err := w.in.add(p); err != nil {
		return err
	}
	w.watches++
	return nil
}

// linkInside reports whether the symbolic link p resolves inside root, or,
// when it cannot be resolved, names a target inside root (it might resolve
// later).
func linkInside(root, p string) bool {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		_, ok := relPath(root, real)
		return ok
	}
	target, err := os.Readlink(p)
	if err != nil {
		return false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	_, ok := relPath(root, filepath.Clean(target))
	return ok
}
