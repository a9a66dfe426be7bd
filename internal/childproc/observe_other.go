//go:build !linux

package childproc

import "github.com/mcpepoch/mcpepoch/localapi"

// Observe has no /proc to read outside Linux: the host records nothing it
// did not compute itself, and mcpepoch status says so.
func Observe(pid int, withDigest bool) *localapi.Observed { return nil }
