package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// releaseVersion is the release this binary was built as, stamped by
// scripts/npm-pack.sh from the repository's VERSION file with -ldflags
// "-X github.com/mcpepoch/mcpepoch/internal/cli.releaseVersion=V". Empty
// in any other build.
var releaseVersion string

// RunVersion is "mcpepoch version [--json]": one line (version), or with
// --json the same facts as one JSON object (VersionInfo) on stdout.
func RunVersion(_ context.Context, args []string, stdio Stdio) error {
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

// BuildVersion is this binary's VersionInfo.
func BuildVersion() VersionInfo {
	bi, _ := debug.ReadBuildInfo()
	info := versionOf(bi)
	info.Version = releaseVersion
	if info.Version == "" {
		info.Version = "devel"
	}
	info.Go, info.Platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	return info
}

// versionOf is the VersionInfo of a binary whose build information is bi
// (nil: none), read from it alone: the release version from the
// -X flag of its -ldflags setting.
func versionOf(bi *debug.BuildInfo) VersionInfo {
	info := VersionInfo{Version: "devel", Go: "go?", Platform: "?/?"}
	if bi == nil {
		return info
	}
	info.Go = bi.GoVersion
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		case "-ldflags":
			if v := ldflagX(s.Value, "releaseVersion"); v != "" {
				info.Version = v
			}
		}
	}
	if goos != "" {
		info.Platform = goos + "/" + goarch
	}
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		info.Module = mv
	}
	info.Revision = vcsRevision(bi.Settings)
	return info
}

// ldflagX is the value that the -ldflags string flags sets this package's
// variable name to with -X, "" when it sets none.
func ldflagX(flags, name string) string {
	key := "github.com/mcpepoch/mcpepoch/internal/cli." + name + "="
	for _, f := range strings.Fields(flags) {
		f = strings.Trim(f, `"'`)
		if v, ok := strings.CutPrefix(f, key); ok {
			return v
		}
	}
	return ""
}

// Line returns the version line, "mcpepoch V (DETAILS)", DETAILS the module version,
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
