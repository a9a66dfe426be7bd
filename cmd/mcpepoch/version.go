package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// releaseVersion is the release this binary was built as, stamped by
// scripts/npm-pack.sh from the repository's VERSION file with
// -ldflags "-X main.releaseVersion=V". Empty in any other build.
var releaseVersion string

// version returns one line: "mcpepoch V (DETAILS)". V is the stamped
// release version, else "devel". DETAILS, each left out when unknown, are
// the module version the go command recorded (a pseudo-version or tag when
// built from a clone, "(devel)" is left out), the VCS revision (12 hex,
// "+dirty" when the work tree had changes), and the Go version and
// platform.
func version() string {
	v := releaseVersion
	if v == "" {
		v = "devel"
	}
	var details []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			details = append(details, "module "+mv)
		}
		if rev := vcsRevision(bi.Settings); rev != "" {
			details = append(details, "revision "+rev)
		}
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return "mcpepoch " + v + " (" + strings.Join(details, ", ") + ")"
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

func errorf(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}
