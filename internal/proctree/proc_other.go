//go:build !linux && !darwin

package proctree

import "errors"

// Parent has no process table to read here: an approval at a terminal
// cannot be told from one by a program, so it proves only same-user.
func Parent(int) (int, bool, error) {
	return 0, false, errors.New("no process table reader on this system")
}

// Args has no process table to read here.
func Args(int) (string, []string, error) {
	return "", nil, errors.New("no process table reader on this system")
}
