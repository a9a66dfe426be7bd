//go:build !mcpepochtest

package userdirs

// testBuild: a product build takes the directories from the account
// database only (a test binary still follows the environment:
// testing.Testing).
const testBuild = false
