package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// releaseVersion is the release this binary was built as, stamped by
// scripts/npm-pack.sh from the repository's VERSION file with -ldflags
// "-X github.com/mcpepoch/mcpepoch/internal/cli.releaseVersion=V" (both
// binaries). Empty in any other build.
var releaseVersion string

// RunVersion is "mcpepoch version [--json]": one line (version), or with
// --json the same facts as one JSON object (VersionInfo) on stdout.
func RunVersion(args []string, stdio Stdio) error {
	fs := NewFlags("version", stdio.Err, "[--json]")
	asJSON := fs.Bool("json", false, "print the version as one JSON object")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError("version takes no arguments, got %q", fs.Args())
	}
	info := BuildVersion()
	if *asJSON {
		return WriteJSON(stdio.Out, info)
	}
	fmt.Fprintln(stdio.Out, info.Line())
	return nil
}

// VersionInfo is what version prints; its JSON shape is --json's.
type VersionInfo struct {
	// Version is the stamped release version, else "devel".
	Version string `json:"version"`
	// Module is the module version the go command recorded (a
	// pseudo-version or tag when built from a clone), "" when unknown.
	Module string `json:"module,omitempty"`
	// Revision is the VCS revision (12 hex, "+dirty" when the work tree had
	// changes), "" when unknown.
	Revision string `json:"revision,omitempty"`
	// Go is the Go version the binary was built with, e.g. "go1.26.0".
	Go string `json:"go"`
	// Platform is GOOS/GOARCH, e.g. "linux/amd64".
	Platform string `json:"platform"`
}

func BuildVersion() VersionInfo {
	info := VersionInfo{Version: releaseVersion, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Version == "" {
		info.Version = "devel"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			info.Module = mv
		}
		info.Revision = vcsRevision(bi.Settings)
	}
	return info
}

// line is one line: "mcpepoch V (DETAILS)", DETAILS the module version,
// the revision (each left out when unknown), the Go version and platform.
func (info VersionInfo) Line() string {
	var details []string
	if info.Module != "" {
		details = append(details, "module "+info.Module)
	}
	if info.Revision != "" {
		details = append(details, "revision "+info.Revision)
	}
	details = append(details, info.Go+" "+info.Platform)
	return "mcpepoch " + info.Version + " (" + strings.Join(details, ", ") + ")"
}

// vcsRevision returns the first 12 hex digits of the vcs.revision build
// setting, with "+dirty" when vcs.modified is true, or "" when the binary
// was built without VCS information.
func vcsRevision(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
