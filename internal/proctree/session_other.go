//go:build !unix

package proctree

import "errors"

// Session has no sessions to read here.
func Session(int) (int, error) { return 0, errors.New("no process sessions on this system") }
