package build

import (
	"context"
	"debug/buildinfo"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// versionFlagRuntimes matches the base names of interpreters that answer
// "--version" with one line: node, nodejs, python, python3, python3.12, bun,
// deno, ruby.
var versionFlagRuntimes = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(node|nodejs|python[0-9.]*|bun|deno|ruby)$`) }) // compiled on first use

// runtimeVersion names the version of the runtime at path: the Go toolchain
// version for a Go binary (read from its build info, nothing is run), the
// first line of "--version" for a known interpreter (run with a 5 s limit),
// else "". cache, when set, is consulted first by digest.
func runtimeVersion(path string, d Digest, cache func(Digest) (string, bool)) string {
	if cache != nil {
		if v, ok := cache(d); ok {
			return v
		}
	}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		return bi.GoVersion
	}
	if !versionFlagRuntimes().MatchString(filepath.Base(path)) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
