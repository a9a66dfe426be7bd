package cli

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
)

// corePackage is the core's main package, below this module's path.
const corePackage = "/cmd/mcpepoch-core"

// CheckCore is the front's check of the core it is about to exec (the
// file core, beside the front at path front), from the build information
// the Go toolchain wrote into the core (debug/buildinfo: about 0.1 ms,
// read only on the way to exec, never for version or record). The core
// belongs to this front when it is this module's cmd/mcpepoch-core, of the
// same module version and sum, built by the same Go with the same build
// settings (flags, tags, -ldflags and so the stamp of one build, cgo,
// GOOS/GOARCH, VCS revision and modified), and linking every module the
// front links at the same version, sum and replacement. Anything else is
// an error (exit 2) naming both files, the fix, and the facts compared:
// both version lines and the first difference. A core that cannot be read
// returns the os error (fs.ErrNotExist when it is missing). Two builds
// without VCS information and without a stamp (go install ./cmd/... with
// -buildvcs=false) at the same flags cannot be told apart.
func CheckCore(front, core string) error {
	fbi, ok := debug.ReadBuildInfo()
	if !ok {
		return pairError(front, "", core, nil, "the front has no build information")
	}
	// The front's line is what its version command prints: the release
	// version and stamp it was linked with, which the build information
	// does not record when it was built with -trimpath (as the npm
	// packages are).
	self := BuildVersion().Line()
	cbi, err := buildinfo.ReadFile(core)
	if err != nil {
		if _, serr := os.Stat(core); serr != nil {
			return serr
		}
		return pairError(front, self, core, nil, fmt.Sprintf("the core is not a Go program with build information (%v)", err))
	}
	if d := pairDiff(fbi, cbi); d != "" {
		return pairError(front, self, core, cbi, d)
	}
	return nil
}

// CheckPair is [CheckCore] of two files: the front at path front and the
// core at path core, each read with debug/buildinfo. It is how a command
// other than the front checks an install (the core's own check of the
// front that started it, doctor's of the installs a hook or a client
// config runs). A file that cannot be read is a mismatch that says why.
func CheckPair(front, core string) error {
	fbi, err := buildinfo.ReadFile(front)
	if err != nil {
		return pairError(front, "", core, nil, fmt.Sprintf("the front's build information cannot be read (%v)", err))
	}
	line := fileVersionLine(fbi)
	cbi, err := buildinfo.ReadFile(core)
	if err != nil {
		return pairError(front, line, core, nil, fmt.Sprintf("the core's build information cannot be read (%v)", err))
	}
	if d := pairDiff(fbi, cbi); d != "" {
		return pairError(front, line, core, cbi, d)
	}
	return nil
}

// fileVersionLine is the version line of a binary read from its file
// (build information bi), with a note when its release version and stamp
// were not recorded: a -trimpath build leaves -ldflags out.
func fileVersionLine(bi *debug.BuildInfo) string {
	line := versionOf(bi).Line()
	trimpath, ldflags := false, false
	for _, s := range bi.Settings {
		trimpath = trimpath || (s.Key == "-trimpath" && s.Value == "true")
		ldflags = ldflags || s.Key == "-ldflags"
	}
	if trimpath && !ldflags {
		line += " (built with -trimpath: its release version and stamp are not recorded in the file)"
	}
	return line
}

// pairDiff is the first fact in which the core cbi differs from what the
// front fbi needs of it, "" when there is none.
func pairDiff(fbi, cbi *debug.BuildInfo) string {
	switch {
	case cbi.Path != fbi.Main.Path+corePackage:
		return fmt.Sprintf("the core is the program %s, not %s", cbi.Path, fbi.Main.Path+corePackage)
	case cbi.Main != fbi.Main:
		return fmt.Sprintf("module %s in the core, %s in the front", moduleLine(&cbi.Main), moduleLine(&fbi.Main))
	case cbi.GoVersion != fbi.GoVersion:
		return fmt.Sprintf("the core was built by %s, the front by %s", cbi.GoVersion, fbi.GoVersion)
	}
	if d := settingsDiff(fbi.Settings, cbi.Settings); d != "" {
		return d
	}
	for _, fd := range fbi.Deps {
		i := slices.IndexFunc(cbi.Deps, func(cd *debug.Module) bool { return cd.Path == fd.Path })
		if i < 0 {
			return fmt.Sprintf("the front links %s %s, the core does not", fd.Path, fd.Version)
		}
		if cd := cbi.Deps[i]; moduleLine(cd) != moduleLine(fd) {
			return fmt.Sprintf("%s in the core, %s in the front", moduleLine(cd), moduleLine(fd))
		}
	}
	return ""
}

// settingsDiff is the first build setting, in the front's order and then
// the core's, whose values differ ("" when none does).
func settingsDiff(front, core []debug.BuildSetting) string {
	get := func(ss []debug.BuildSetting, key string) (string, bool) {
		for _, s := range ss {
			if s.Key == key {
				return s.Value, true
			}
		}
		return "", false
	}
	for _, ss := range [][]debug.BuildSetting{front, core} {
		for _, s := range ss {
			fv, fok := get(front, s.Key)
			cv, cok := get(core, s.Key)
			if fv != cv || fok != cok {
				return fmt.Sprintf("build setting %s: %s in the core, %s in the front", s.Key, settingText(cv, cok), settingText(fv, fok))
			}
		}
	}
	return ""
}

func settingText(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprintf("%q", v)
}

// moduleLine is a dependency as go version -m prints it: path, version,
// sum, and "=> replacement" when replaced.
func moduleLine(m *debug.Module) string {
	s := strings.TrimSpace(m.Path + " " + m.Version + " " + m.Sum)
	if m.Replace != nil {
		s += " => " + moduleLine(m.Replace)
	}
	return s
}

// pairError is the mismatch error: the sentence with the fix, then one
// hint line with each side's version line (frontLine, "" when unknown;
// the core's when its build information cbi was read) and one with the
// difference.
func pairError(front, frontLine, core string, cbi *debug.BuildInfo, diff string) error {
	var hints []string
	if frontLine != "" {
		hints = append(hints, "front "+front+": "+frontLine)
	}
	if cbi != nil {
		hints = append(hints, "core "+core+": "+fileVersionLine(cbi))
	}
	hints = append(hints, "they differ: "+diff)
	return &ExitError{Code: ExitUsage, Hints: hints,
		Err: fmt.Errorf("%s is not from the same build as %s, which started it: %s", core, front, InstallFixFor(front))}
}
