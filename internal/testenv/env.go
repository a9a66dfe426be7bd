package testenv

import (
	"os"
	"path/filepath"
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
// it starts, at a new empty directory, and XDG_STATE_HOME at another one
// inside it, and returns a function that removes them. The trust store and
// the policy floors live in the user's config directory
// (trust.DefaultDir), the copies of the audit heads in the user's state
// directory (layout.StateHome): tests get ones of their own, never the
// user's. Call it from TestMain before m.Run. Only a test binary and the
// binary [Mcpepoch] builds (-tags mcpepochtest) follow these variables
// (internal/userdirs); a product build ([Build] of ./cmd/mcpepoch) takes
// its directories from the account database, and a test that runs one
// gives it a home of its own (internal/attack binds one with bwrap) or
// removes what it kept (npm's tests). A client that starts the host with a
// default environment of its own (the TypeScript SDK's stdio transport,
// the Inspector CLI) must be given the variable explicitly. On macOS, where
// os.UserConfigDir ignores XDG_CONFIG_HOME, it has no effect.
//
// The go command keeps the user's settings (GOFLAGS, GOTOOLCHAIN, …) in
// the same directory (go env GOENV): GOENV is pinned to the user's file
// first, so that go build run by this process and its children sees the
// settings every other test process sees. Without that, two test processes
// build the shared binaries of [Build] with different flags (a VCS stamp
// or none) and relink them under each other's running tests.
func UserConfig() (remove func()) {
	dir, err := os.MkdirTemp("", "mcpepoch-test-config-")
	if err != nil {
		panic(err)
	}
	if os.Getenv("GOENV") == "" {
		if cfg, err := os.UserConfigDir(); err == nil {
			os.Setenv("GOENV", filepath.Join(cfg, "go", "env"))
		}
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	return func() { os.RemoveAll(dir) }
}
