package testenv

import (
	"os"
	"strings"
)

// Environ returns the test process's environment without MCPEPOCH and
// MCPEPOCH_FLAGS (which would redirect the build hooks of the examples),
// followed by env.
func Environ(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCPEPOCH=") || strings.HasPrefix(kv, "MCPEPOCH_FLAGS=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// UserConfig points XDG_CONFIG_HOME, for this test process and every process
// it starts, at a new empty directory, and returns a function that removes
// it. The trust store and the policy floors live in the user's config
// directory (trust.DefaultDir): tests get one of their own, never the
// user's. Call it from TestMain before m.Run. A client that starts the host
// with a default environment of its own (the TypeScript SDK's stdio
// transport, the Inspector CLI) must be given the variable explicitly. On
// macOS, where os.UserConfigDir ignores XDG_CONFIG_HOME, it has no effect.
func UserConfig() (remove func()) {
	dir, err := os.MkdirTemp("", "mcpepoch-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	return func() { os.RemoveAll(dir) }
}
