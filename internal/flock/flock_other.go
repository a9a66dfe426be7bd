//go:build !unix

// Package flock takes advisory file locks with flock(2); this platform
// has none, and every function fails with ErrUnsupported.
package flock

import (
	"errors"
	"os"
	"time"
)

// ErrUnsupported is the error of every function here on this platform.
var ErrUnsupported = errors.New("no file locking on this platform")

// Supported reports whether this platform has flock(2).
const Supported = false

// Lock fails: see ErrUnsupported.
func Lock(path string) (unlock func(), err error) { return nil, ErrUnsupported }

// File fails: see ErrUnsupported.
func File(f *os.File, exclusive bool, timeout time.Duration) error { return ErrUnsupported }

// Unlock fails: see ErrUnsupported.
func Unlock(f *os.File) error { return ErrUnsupported }
