// Package tty reads one key at a time from a terminal: cbreak mode (no
// line editing, no echo, signals kept, so Ctrl-C still interrupts), the
// mode a one-key prompt needs and nothing more.
package tty

import (
	"errors"
	"os"
)

// ErrUnsupported is Cbreak's error where the platform has no termios.
var ErrUnsupported = errors.New("tty: no cbreak mode on this platform")

// Cbreak puts the terminal f in cbreak mode (termios: ICANON and ECHO
// off, ISIG kept, one byte per read) and returns what restores the mode it
// had. It fails when f is not a terminal.
func Cbreak(f *os.File) (restore func(), err error) { return cbreak(f) }
