package cli

import (
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestPairDiff: each fact the front compares, changed alone in the core,
// is the difference named; a core that differs only in what the front
// does not link pairs.
func TestPairDiff(t *testing.T) {
	front := func() *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/mcpepoch/mcpepoch/cmd/mcpepoch",
			Main:     debug.Module{Path: "github.com/mcpepoch/mcpepoch", Version: "(devel)"},
			Deps:     []*debug.Module{{Path: "github.com/BurntSushi/toml", Version: "v1.5.0", Sum: "h1:a"}},
			Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X github.com/mcpepoch/mcpepoch/internal/cli.buildStamp=A"}, {Key: "GOOS", Value: "linux"}}}
	}
	core := func() *debug.BuildInfo {
		c := front()
		c.Path = "github.com/mcpepoch/mcpepoch/cmd/mcpepoch-core"
		c.Deps = append(c.Deps, &debug.Module{Path: "github.com/go-task/task/v3", Version: "v3.54.0"})
		return c
	}
	if d := pairDiff(front(), core()); d != "" {
		t.Errorf("a core of the same build: %q, want no difference", d)
	}
	for _, tc := range []struct {
		change func(c *debug.BuildInfo)
		want   string
	}{
		{func(c *debug.BuildInfo) { c.Path = "github.com/mcpepoch/mcpepoch" }, "the core is the program github.com/mcpepoch/mcpepoch, not"},
		{func(c *debug.BuildInfo) { c.Main.Path = "example.com/other" }, "module example.com/other (devel) in the core, github.com/mcpepoch/mcpepoch (devel) in the front"},
		{func(c *debug.BuildInfo) { c.GoVersion = "go1.26.7" }, "the core was built by go1.26.7, the front by go1.26.8"},
		{func(c *debug.BuildInfo) {
			c.Settings[0].Value = "-X github.com/mcpepoch/mcpepoch/internal/cli.buildStamp=B"
		}, "build setting -ldflags:"},
		{func(c *debug.BuildInfo) { c.Settings = c.Settings[1:] }, "build setting -ldflags: unset in the core"},
		{func(c *debug.BuildInfo) {
			c.Settings = append(c.Settings, debug.BuildSetting{Key: "-tags", Value: "x"})
		}, `build setting -tags: "x" in the core, unset in the front`},
		{func(c *debug.BuildInfo) { c.Deps[0].Version = "v1.4.0" }, "github.com/BurntSushi/toml v1.4.0 h1:a in the core, github.com/BurntSushi/toml v1.5.0 h1:a in the front"},
		{func(c *debug.BuildInfo) { c.Deps[0].Replace = &debug.Module{Path: "../toml"} }, "=> ../toml in the core"},
		{func(c *debug.BuildInfo) { c.Deps = c.Deps[1:] }, "the front links github.com/BurntSushi/toml v1.5.0, the core does not"},
	} {
		c := core()
		c.Settings = append([]debug.BuildSetting(nil), c.Settings...)
		c.Deps = []*debug.Module{{Path: c.Deps[0].Path, Version: c.Deps[0].Version, Sum: c.Deps[0].Sum}, c.Deps[1]}
		tc.change(c)
		if d := pairDiff(front(), c); !strings.Contains(d, tc.want) || strings.Contains(d, "  ") {
			t.Errorf("difference %q, want one containing %q, with single spaces", d, tc.want)
		}
	}
}

// TestVersionOfFile: the version line of a binary read from its file
// takes the release version and stamp from its -ldflags.
func TestVersionOfFile(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "-ldflags", Value: `"-s -w -X github.com/mcpepoch/mcpepoch/internal/cli.releaseVersion=0.1.0 -X github.com/mcpepoch/mcpepoch/internal/cli.buildStamp=S1"`},
		{Key: "GOARCH", Value: "arm64"}, {Key: "GOOS", Value: "darwin"}}}
	if got, want := versionOf(bi).Line(), "mcpepoch 0.1.0 (stamp S1, go1.26.8 darwin/arm64)"; got != want {
		t.Errorf("version line %q, want %q", got, want)
	}
}

// TestMismatchShowsTheFrontsOwnVersionLine: the front's hint line is the
// line its version command prints (release version and stamp as linked,
// which -trimpath builds do not record in the build information), and a
// core read from its file says when its build information cannot tell.
func TestMismatchShowsTheFrontsOwnVersionLine(t *testing.T) {
	defer func(v, s string) { releaseVersion, buildStamp = v, s }(releaseVersion, buildStamp)
	releaseVersion, buildStamp = "9.9.9", "STAMP1"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = CheckCore("/x/bin/mcpepoch", self) // the test binary: not the core
	ee, ok := errors.AsType[*ExitError](err)
	if !ok || len(ee.Hints) < 2 {
		t.Fatalf("CheckCore of a program that is not the core: %v, want a mismatch with hints", err)
	}
	if want := "front /x/bin/mcpepoch: " + BuildVersion().Line(); ee.Hints[0] != want || !strings.Contains(want, "9.9.9") || !strings.Contains(want, "stamp STAMP1") {
		t.Errorf("front hint %q, want %q", ee.Hints[0], want)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}}}
	if got := fileVersionLine(bi); !strings.Contains(got, "built with -trimpath: its release version and stamp are not recorded") {
		t.Errorf("version line of a -trimpath build read from its file: %q", got)
	}
}
