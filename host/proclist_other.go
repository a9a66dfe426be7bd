//go:build !linux && !darwin

package host

import "errors"

// procList has no process table to read here.
func procList() ([]int, error) {
	return nil, errors.New("no process table reader on this system")
}
