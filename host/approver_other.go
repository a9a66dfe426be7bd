//go:build !linux && !darwin

package host

import "errors"

// procParent has no process table to read here: an approval at a terminal
// cannot be told from one by a program, so it proves only same-user.
func procParent(int) (int, bool, error) {
	return 0, false, errors.New("no process table reader on this system")
}

// procArgs has no process table to read here.
func procArgs(int) (string, []string, error) {
	return "", nil, errors.New("no process table reader on this system")
}
