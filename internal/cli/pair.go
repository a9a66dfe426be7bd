package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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

// NPMInstallFixStart begins the fix of an install whose front runs from
// an npm platform package (node_modules/@mcpepoch/PLATFORM/bin).
const NPMInstallFixStart = "reinstall both npm tarballs"

// NPMInstallFix is how to install both binaries again when the front at
// path front runs from an npm platform package: both tarballs by name,
// as the launcher's missing-platform message does. The packages are not
// on the registry: a bare npm i -D mcpepoch would fetch whatever someone
// published under that name.
func NPMInstallFix(front string) string {
	platform := "PLATFORM"
	if _, rest, ok := strings.Cut(filepath.ToSlash(front), "/node_modules/@mcpepoch/"); ok {
		if p, _, _ := strings.Cut(rest, "/"); p != "" {
			platform = p
		}
	}
	v := releaseVersion
	if v == "" {
		v = "V"
	}
	return fmt.Sprintf("%s (npm i -D DIR/mcpepoch-%s.tgz DIR/mcpepoch-%s-%s.tgz, which bash scripts/npm-pack.sh DIR builds in a clone)",
		NPMInstallFixStart, v, platform, v)
}

// InstallFixFor is the fix for an install whose front is at path front:
// NPMInstallFix inside an npm platform package, else InstallFix.
func InstallFixFor(front string) string {
	if strings.Contains(filepath.ToSlash(front), "/node_modules/@mcpepoch/") {
		return NPMInstallFix(front)
	}
	return InstallFix
}

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

// WithFrontEnv returns env (KEY=VALUE entries, as os.Environ gives them)
// with every FrontEnv entry it had removed and this build's own appended:
// "BUILDID FRONT". A caller's own value, even several, never reaches the
// core in its place (the first of duplicate entries is the one a Go
// program sees).
func WithFrontEnv(env []string, front string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, FrontEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, FrontEnv+"="+BuildID()+" "+front)
}

// CheckFront is the core's first step: when a front started it (FrontEnv
// is set), FrontEnv is removed from the environment, and a front of
// another build is an error (exit 2) naming both binaries and the fix. A
// value the core cannot verify (no build id, no front path, or a core
// without build information) counts as another build, never as a pass. A
// core started by itself has nothing to check.
func CheckFront() error {
	v, ok := os.LookupEnv(FrontEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(FrontEnv)
	id, front, _ := strings.Cut(v, " ")
	if own := BuildID(); own != "" && id == own && front != "" {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		self = CoreName
	}
	if front != "" {
		// The front's file tells what differs; a front that matches by its
		// file but sent another id leaves the plain sentence.
		if err := CheckPair(front, self); err != nil {
			return err
		}
	}
	return UsageError("%s is not from the same build as %s, which started it: %s", self, front, InstallFixFor(front))
}
