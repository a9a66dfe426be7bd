// Package safefile opens and reads files that others may have put in place
// (a manifest, mcpepoch.toml, a grants file, a lockfile) so that no such file
// can hang or exhaust the reader: only a regular file is read, the open never
// blocks (a FIFO with no writer would block open(2) forever, deaf to
// SIGTERM), and a whole-file read stops at a size limit (a link to /dev/zero
// would otherwise fill memory).
package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error of a *fs.PathError for a path that names
// something other than a regular file: a directory, a FIFO, a device, a
// socket, or (for OpenNoFollow) a symbolic link.
type NotRegularError struct {
	Mode fs.FileMode // the type bits of what the path names
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("not a regular file (%s)", kind(e.Mode))
}

// TooLargeError is the error of a *fs.PathError for a regular file over the
// limit its reader set.
type TooLargeError struct {
	Limit int64 // bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the %s limit for this file", Size(e.Limit))
}

// Refusal returns the *NotRegularError or *TooLargeError inside err, or nil
// when err is not such a refusal. Callers that name the file themselves
// wrap it: "<path>: not a regular file (a named pipe)".
func Refusal(err error) error {
	var nr *NotRegularError
	if errors.As(err, &nr) {
		return nr
	}
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return tl
	}
	return nil
}

func notRegular(op, path string, m fs.FileMode) error {
	return &fs.PathError{Op: op, Path: path, Err: &NotRegularError{Mode: m.Type()}}
}

func tooLarge(path string, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Limit: limit}}
}

// Open opens the regular file at path for reading, following symbolic
// links. Every error is a *fs.PathError naming path: its Err is a
// *NotRegularError when path names anything else, found without blocking
// and, for what stat(2) shows first, without opening it (opening a device
// can have effects); errors.Is(err, fs.ErrNotExist) for a missing file.
func Open(path string) (*os.File, error) { return open(path, false) }

// OpenNoFollow is Open for files only mcpepoch writes (under .mcpepoch/):
// a symbolic link at path is refused (O_NOFOLLOW) with a *NotRegularError,
// so that a link planted there cannot redirect the read.
func OpenNoFollow(path string) (*os.File, error) { return open(path, true) }

func open(path string, noFollow bool) (*os.File, error) {
	stat, flags := os.Stat, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC
	if noFollow {
		stat, flags = os.Lstat, flags|syscall.O_NOFOLLOW
	}
	if fi, err := stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular("open", path, fi.Mode())
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flags, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		if noFollow && errors.Is(err, syscall.ELOOP) {
			return nil, notRegular("open", path, fs.ModeSymlink)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	// What is open now may not be what stat saw: check the descriptor.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular("open", path, fi.Mode())
	}
	// O_NONBLOCK was for the open only; reads of a regular file block.
	if err := syscall.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// ReadFile reads the whole regular file at path, following symbolic links.
// A file over limit bytes is refused with a *TooLargeError (inside a
// *fs.PathError), whether its size says so or it grows while being read; no
// more than limit+1 bytes are ever read. Other errors are those of Open, or
// a *fs.PathError of the read.
func ReadFile(path string, limit int64) ([]byte, error) { return readFile(path, limit, false) }

// ReadFileNoFollow is ReadFile with OpenNoFollow's refusal of a link.
func ReadFileNoFollow(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, true)
}

func readFile(path string, limit int64, noFollow bool) ([]byte, error) {
	f, err := open(path, noFollow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	// The size is a hint (files in /proc say 0); the limit is what counts.
	// Room for it and a little more reads a file that did not grow in one
	// read and sees its end in the next (a 350 KB stat cache took twenty
	// reads and as many copies through io.ReadAll).
	var buf bytes.Buffer
	buf.Grow(int(min(fi.Size(), limit)) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(path, limit)
	}
	return buf.Bytes(), nil
}

// Size formats n bytes for a message: "1 MiB", "512 KiB", "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}
