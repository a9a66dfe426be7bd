// Package selfcmd names mcpepoch's own commands in what it tells a person
// (refusals, advice, fixes, the errors a host sends the MCP client) the way
// that person runs them: "mcpepoch approve" for an install on PATH (go
// install, a global npm install), "npx mcpepoch approve" for a project's
// npm install, which puts no mcpepoch on PATH.
//
// The npm launcher (npm/mcpepoch/bin/mcpepoch.js) says which through Env,
// which the binary reads once at its start (Load).
package selfcmd

import (
	"os"
	"path/filepath"
	"strings"
)

// Env is the environment variable through which the npm launcher tells
// the binary how the person runs it: "npx mcpepoch" when the launcher runs
// from a project's node_modules (node_modules/.bin/mcpepoch, or npx's
// cache). Unset, or any value not in known, is "mcpepoch".
const Env = "MCPEPOCH_INVOKED_AS"

// known are the values of Env taken: the name is printed in messages, so
// the environment chooses among these, never free text.
var known = map[string]bool{"mcpepoch": true, "npx mcpepoch": true, "bunx mcpepoch": true, "pnpm exec mcpepoch": true, "yarn mcpepoch": true}

// name is what Name returns; set by Load before the command starts its
// goroutines, read-only after.
var name = "mcpepoch"

// Load reads Env and removes it from this process's environment, so that
// what the command starts (a server, a build, a hook) does not inherit
// it. Without Env, an executable at the path self (the one the person or
// client started: "" when unknown) inside a project's npm platform
// package (node_modules/@mcpepoch/PLATFORM/bin, a client config pointing
// at it) is "npx mcpepoch" too; a global npm install's
// (PREFIX/lib/node_modules/…) is on PATH. Called once, at the start of
// main, before anything asks Name.
func Load(self string) {
	v, ok := os.LookupEnv(Env)
	if ok {
		os.Unsetenv(Env)
		if known[v] {
			name = v
		}
		return
	}
	if f := filepath.ToSlash(self); strings.Contains(f, "/node_modules/@mcpepoch/") && !strings.Contains(f, "/lib/node_modules/") {
		name = "npx mcpepoch"
	}
}

// Name is how the person runs mcpepoch: "mcpepoch" or, from a project's
// npm install, "npx mcpepoch".
func Name() string { return name }

// Cmd is the command line "NAME args" for a message: Cmd("approve") is
// "npx mcpepoch approve" for a project's npm install.
func Cmd(args string) string { return name + " " + args }
