// Package atomicfile writes whole files so that a reader, or a crash, never
// sees a torn one.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces the file at path with data. It writes a temporary file in
// the same directory (so the rename cannot cross file systems), fsyncs it,
// sets mode perm, renames it over path and fsyncs the directory. Either the
// old or the new content is visible at every moment, even across a crash,
// and once Write returns a crash no longer brings the old content back.
// On error the temporary file is removed and path is left as it was; the
// error names the file.
func Write(path string, data []byte, perm os.FileMode) error {
	if err := replace(path, data, perm); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		d.Sync() // best effort: not every file system supports fsync on a directory
		d.Close()
	}
	return nil
}

// Replace is Write without the fsync of the directory: readers, and a
// crash, still see the old or the new content whole, never a torn or
// empty file, but a crash soon after Replace returns may bring the old
// content back. It is for files whose next write corrects such a loss and
// whose readers never trust them alone: the run manifest (hosts recompute
// the identity; the next build rewrites it), the hashing caches. It saves
// one journal commit per write, milliseconds on a busy disk.
func Replace(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm)
}

// Publish replaces the file at path with data as Replace does, but renames
// the temporary file over path before its fsync rather than after: it
// returns once readers see the new content, whole (rename(2) is atomic),
// and sync, which makes that content durable and must be called once. The
// caller runs sync while it does something else that waits anyway (the
// build hook: while hosts answer its signal, or beside the builds log's
// own fsync). Until sync returns, a crash of the machine may leave the old
// content, or, on a file system that does not order a rename after the
// data of the file renamed (ext4 and btrfs do for a rename over an
// existing file), an empty file at path. It is for files that a crash
// already may set back and whose readers treat a bad one as a reported
// error, not as truth: the run manifest. On error nothing was renamed and
// path is as it was.
func Publish(path string, data []byte, perm os.FileMode) (sync func() error, err error) {
	f, err := write(path, data, perm)
	if err != nil {
		return nil, err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return func() error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: fsync: %w", path, err)
		}
		return nil
	}, nil
}

// write writes data to a new temporary file beside path with mode perm and
// returns it open; on error it is removed.
func write(path string, data []byte, perm os.FileMode) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(perm)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return f, nil
}

// replace writes data to a temporary file beside path, fsyncs it, sets
// mode perm and renames it over path.
func replace(path string, data []byte, perm os.FileMode) (err error) {
	f, err := write(path, data, perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// The data must be on disk before the name is: else a crash could
	// leave path naming an empty file.
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
