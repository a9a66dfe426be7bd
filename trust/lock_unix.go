//go:build unix

package trust

import "github.com/mcpepoch/mcpepoch/internal/flock"

// lock takes flock(2) on the file at path (created 0600), waiting as long
// as it takes, and returns its release. Two processes updating the store
// take turns.
func lock(path string) (func(), error) { return flock.Lock(path) }
