package hook

import "github.com/mcpepoch/mcpepoch/manifest"

// SetPublish replaces how Record writes the manifest until the test ends.
func SetPublish(t interface{ Cleanup(func()) }, f func(string, *manifest.File) (func() error, error)) {
	old := publish
	publish = f
	t.Cleanup(func() { publish = old })
}
