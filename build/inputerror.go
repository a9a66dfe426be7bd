package build

import "fmt"

// InputError reports a file that the identity needs and that cannot be read.
// Field names the input ("entry", "lockfile", "runtime", "command").
type InputError struct {
	Field string
	Path  string
	Err   error
}

func (e *InputError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Field, e.Path, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }
