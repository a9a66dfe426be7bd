package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// The install is two binaries side by side: the front (mcpepoch), which
// runs version and record itself, and the core (mcpepoch-core), every
// command, which the front becomes through exec for every command but
// those two. They belong together when they come from one build.

// CoreName is the core's file name, beside the front.
const CoreName = "mcpepoch-core"

// FrontEnv is the environment variable through which the front tells the
// core it execs which build it is part of, and its own path:
// "BUILDID PATH" (BuildID, then the front's executable). The core reads
// it and removes it before anything else (CheckFront), so neither a
// server nor a command started by the core inherits it.
const FrontEnv = "MCPEPOCH_FRONT"

// InstallFix is how to install both binaries again.
const InstallFix = "install both again (from a clone: go install ./cmd/...)"

// BuildID is a short digest of what the Go toolchain recorded of this
// binary's build (runtime/debug.BuildInfo): the Go version, the main
// module's path, version and sum, and every build setting (flags, tags,
// cgo, GOOS/GOARCH, VCS revision, time and modified). The front and the
// core of one `go install ./cmd/...` (or one scripts/npm-pack.sh build)
// have the same; binaries built from another revision, with other flags
// or by another Go do not. Two builds of one work tree with uncommitted
// changes, or without VCS information, at the same flags cannot be told
// apart. The packages each binary links are left out: the front links
// fewer. "" when the binary has no build information.
func BuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", bi.GoVersion, bi.Main.Path, bi.Main.Version, bi.Main.Sum)
	for _, s := range bi.Settings {
		fmt.Fprintf(h, "%s=%s\x00", s.Key, s.Value)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// CheckFront is the core's first step: when a front started it (FrontEnv
// is set), FrontEnv is removed from the environment, and a front of
// another build is an error (exit 2) naming both binaries and the fix.
// A core started by itself has nothing to check.
func CheckFront() error {
	v, ok := os.LookupEnv(FrontEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(FrontEnv)
	id, front, _ := strings.Cut(v, " ")
	if id == BuildID() {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		self = CoreName
	}
	return UsageError("%s is not from the same build as %s, which started it: %s", self, front, InstallFix)
}
