package config

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestResolvePrecedence(t *testing.T) {
	full := write(t, "label = \"file-label\"\ncommand = [\"node\", \"dist/server.js\"]\nentry = \"dist/server.js\"\nlockfiles = [\"pnpm-lock.yaml\"]\n[host]\ngrace = \"2s\"\nrestart = \"close\"\n")
	empty := write(t, "")
	load := func(dir string) *Config {
		c, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	flags := Flags{Label: "flag-label", Command: []string{"go", "run", "."}, Entry: "main.go",
		Lockfiles: []string{"go.sum"}, Restart: "manual", Grace: time.Second}
	for _, tc := range []struct {
		name string
		dir  string
		f    Flags
		want Settings
	}{
		{"flags win", full, flags, Settings{Label: "flag-label", Command: []string{"go", "run", "."}, Restart: "manual", Grace: time.Second}},
		{"file over defaults", full, Flags{}, Settings{Label: "file-label", Command: []string{"node", "dist/server.js"}, Restart: "close", Grace: 2 * time.Second}},
		{"defaults", empty, Flags{}, Settings{Label: filepath.Base(empty), Restart: "keep", Grace: 5 * time.Second}},
	} {
		s, err := load(tc.dir).Resolve(tc.dir, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.Root != tc.dir || s.Label != tc.want.Label || !slices.Equal(s.Command, tc.want.Command) ||
			s.Restart != tc.want.Restart || s.Grace != tc.want.Grace {
			t.Errorf("%s: got %+v, want %+v", tc.name, s, tc.want)
		}
		if s.Spec.Dir != tc.dir || !slices.Equal(s.Spec.Command, s.Command) {
			t.Errorf("%s: spec dir %q command %v, want the root and the command", tc.name, s.Spec.Dir, s.Spec.Command)
		}
	}

	s, _ := load(full).Resolve(full, flags)
	if s.Spec.Entry != "main.go" || !slices.Equal(s.Spec.Lockfiles, []string{"go.sum"}) {
		t.Errorf("flags: entry %q lockfiles %v, want main.go [go.sum]", s.Spec.Entry, s.Spec.Lockfiles)
	}
	s, _ = load(full).Resolve(full, Flags{})
	if s.Spec.Entry != "dist/server.js" || !slices.Equal(s.Spec.Lockfiles, []string{"pnpm-lock.yaml"}) {
		t.Errorf("file: entry %q lockfiles %v", s.Spec.Entry, s.Spec.Lockfiles)
	}
	// An empty command given on the command line is given: it is not
	// replaced by the file's.
	s, _ = load(full).Resolve(full, Flags{Command: []string{}})
	if len(s.Command) != 0 {
		t.Errorf("empty --command resolved to %v", s.Command)
	}
}

func TestResolveBadRestartFlag(t *testing.T) {
	dir := write(t, "")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(dir, Flags{Restart: "hot"})
	var fe *FlagError
	if !errors.As(err, &fe) || err.Error() != `--restart "hot": want keep, close or manual` {
		t.Errorf("Resolve(--restart hot) = %v, want a *FlagError", err)
	}
	for _, m := range RestartModes {
		if _, err := c.Resolve(dir, Flags{Restart: m}); err != nil {
			t.Errorf("--restart %s: %v", m, err)
		}
	}
}
