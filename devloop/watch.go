package devloop

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// startWatch starts the watcher goroutine: it sends the changed sources of
// each burst, once the burst has been quiet for the debounce, on trigger
// (a send that finds trigger full merges into the waiting burst), and
// problems on events. It returns how it watches, for the "watching" event.
func startWatch(ctx context.Context, o Options, m matcher, lrn *learner, trigger chan []string, events chan Event) (string, error) {
	if o.Poll <= 0 {
		w, err := fsnotify.NewWatcher()
		if err == nil {
			n, err := addTree(w, o.Root)
			if err == nil {
				go notifyLoop(ctx, o, m, lrn, w, trigger, events)
				return fmt.Sprintf("watching %d directories (file events)", n), nil
			}
			w.Close()
			events <- Event{Time: time.Now(), Type: "watch_error", Message: fmt.Sprintf("file events: %v; comparing files every 500ms instead", err)}
		} else {
			events <- Event{Time: time.Now(), Type: "watch_error", Message: fmt.Sprintf("file events: %v; comparing files every 500ms instead", err)}
		}
		o.Poll = 500 * time.Millisecond
	}
	go pollLoop(ctx, o, m, lrn, trigger)
	return fmt.Sprintf("comparing the sources every %s", o.Poll), nil
}

// addTree watches dir and every directory below it that is not skipped,
// and returns how many it added.
func addTree(w *fsnotify.Watcher, dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // gone already, or unreadable: nothing to watch
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if err := w.Add(p); err != nil {
			return fmt.Errorf("watch %s: %w", p, err)
		}
		n++
		return nil
	})
	return n, err
}

// burst collects the changed sources until the debounce runs out.
type burst struct {
	paths []string
	// created are the paths whose first event in the burst created them:
	// those gone again when the burst ends were an editor's temporary
	// files (sed -i's sedXXXXXX, vim's 4913 and FILE~), not changes.
	created map[string]bool
	timer   *time.Timer
	// digests, when not nil, are the last content seen of each source:
	// a path whose content is the same again is dropped at send.
	digests map[string][sha256.Size]byte
}

// maxDigest bounds the files whose content a burst compares: 4 MiB.
const maxDigest = 4 << 20

// digest returns the SHA-256 of the file, false when it is gone, not a
// regular file or larger than maxDigest.
func digest(name string) ([sha256.Size]byte, bool) {
	f, err := os.Open(name)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDigest {
		return [sha256.Size]byte{}, false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxDigest+1)); err != nil {
		return [sha256.Size]byte{}, false
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d, true
}

// seedDigests records the content of every source, when o asks to compare
// content.
func seedDigests(o Options, m matcher) map[string][sha256.Size]byte {
	if !o.Tree {
		return nil
	}
	out := map[string][sha256.Size]byte{}
	for _, rel := range sources(o.Root, o.Root, m) {
		if d, ok := digest(filepath.Join(o.Root, filepath.FromSlash(rel))); ok {
			out[rel] = d
		}
	}
	return out
}

// unchanged reports whether rel has the content last seen, and records
// what it has now.
func (b *burst) unchanged(root, rel string) bool {
	if b.digests == nil {
		return false
	}
	d, ok := digest(filepath.Join(root, filepath.FromSlash(rel)))
	if !ok {
		delete(b.digests, rel)
		return false
	}
	old, seen := b.digests[rel]
	b.digests[rel] = d
	return seen && old == d
}

// add adds rel to the burst; created says the event created it.
func (b *burst) add(rel string, created bool, debounce time.Duration) {
	if !slices.Contains(b.paths, rel) {
		b.paths = append(b.paths, rel)
		if created {
			if b.created == nil {
				b.created = map[string]bool{}
			}
			b.created[rel] = true
		}
	}
	if b.timer == nil {
		b.timer = time.NewTimer(debounce)
	} else {
		b.timer.Reset(debounce)
	}
}

func (b *burst) c() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

// send hands the burst to the builder, merged with a burst it has not
// taken yet, without the paths created and gone within it; a burst of
// nothing else is dropped.
func (b *burst) send(root string, trigger chan []string) {
	paths := slices.DeleteFunc(b.paths, func(rel string) bool {
		_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
		return b.created[rel] && errors.Is(err, fs.ErrNotExist) || b.unchanged(root, rel)
	})
	b.paths, b.created, b.timer = nil, nil, nil
	if len(paths) == 0 {
		return
	}
	select {
	case waiting := <-trigger:
		for _, p := range waiting {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	default:
	}
	trigger <- paths
}

func notifyLoop(ctx context.Context, o Options, m matcher, lrn *learner, w *fsnotify.Watcher, trigger chan []string, events chan Event) {
	defer w.Close()
	b := burst{digests: seedDigests(o, m)}
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.c():
			b.send(o.Root, trigger)
		case err := <-w.Errors:
			select {
			case events <- Event{Time: time.Now(), Type: "watch_error", Message: err.Error()}:
			default:
			}
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && !skipDir(fi.Name()) {
					// A new directory is watched at once, and what is
					// already in it counts as created.
					addTree(w, ev.Name)
					for _, rel := range sources(o.Root, ev.Name, m) {
						if !lrn.output(rel) {
							b.add(rel, true, o.Debounce)
						}
					}
					continue
				}
			}
			rel, err := filepath.Rel(o.Root, ev.Name)
			if err == nil && m.match(filepath.ToSlash(rel)) && !lrn.output(filepath.ToSlash(rel)) {
				b.add(filepath.ToSlash(rel), ev.Has(fsnotify.Create), o.Debounce)
			}
		}
	}
}

// sources returns the sources under dir, relative to root.
func sources(root, dir string, m matcher) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != dir && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if rel, err := filepath.Rel(root, p); err == nil && !d.IsDir() && m.match(filepath.ToSlash(rel)) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// stamp is what the poller compares of a file.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func snapshot(root string, m matcher) map[string]stamp {
	out := map[string]stamp{}
	for _, rel := range sources(root, root, m) {
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			out[rel] = stamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
		}
	}
	return out
}

func pollLoop(ctx context.Context, o Options, m matcher, lrn *learner, trigger chan []string) {
	prev := snapshot(o.Root, m)
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	b := burst{digests: seedDigests(o, m)}
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.c():
			b.send(o.Root, trigger)
		case <-tick.C:
			cur := snapshot(o.Root, m)
			for rel, s := range cur {
				if p, ok := prev[rel]; (!ok || p != s) && !lrn.output(rel) {
					b.add(rel, false, o.Debounce)
				}
			}
			for rel := range prev {
				if _, ok := cur[rel]; !ok && !lrn.output(rel) {
					b.add(rel, false, o.Debounce)
				}
			}
			prev = cur
		}
	}
}
