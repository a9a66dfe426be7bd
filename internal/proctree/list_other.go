//go:build !linux && !darwin

package proctree

import "errors"

// List has no process table to read here.
func List() ([]int, error) {
	return nil, errors.New("no process table reader on this system")
}
