//go:build mcpepochtest

package userdirs

// testBuild: a binary built with -tags mcpepochtest (the end-to-end
// tests' build, internal/testenv.Mcpepoch) follows the environment, so
// that every test gets a config and state directory of its own
// (internal/testenv.UserConfig), never the user's. A product build has no
// such seam.
const testBuild = true
