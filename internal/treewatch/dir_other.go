//go:build !linux

package treewatch

import (
	"context"

	"github.com/fsnotify/fsnotify"
)

// WatchDir calls changed with the path of each entry of dir that changed
// (fsnotify's events), and gone once if dir itself goes away, from one
// goroutine, until ctx ends, logging the watcher's errors with logf. It
// returns once watching, or an error when dir cannot be watched.
func WatchDir(ctx context.Context, dir string, changed func(path string), gone func(), logf func(string, ...any)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return err
	}
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name == dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
					gone()
					return
				}
				changed(ev.Name)
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				logf("manifest watch: %v", err)
			}
		}
	}()
	return nil
}
