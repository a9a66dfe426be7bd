package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// On a Makefile project, dev rebuilds on a save of what the build target
// is built from: its prerequisites, through the targets they name; with
// no prerequisites (and no build file naming sources), any file of the
// project but the build's own output, which a build rewriting it with the
// same bytes does not count as a change.
func TestDevMakefileWatchesPrerequisites(t *testing.T) {
	t.Parallel()
	mk := testenv.Make(t)
	bin := testenv.Mcpepoch(t)
	for _, c := range []struct{ name, makefile, note, save, learnt string }{
		{"prerequisites", "SRC = server.src $(wildcard notes/*.sh)\n.PHONY: build\nbuild: server.sh\n\nserver.sh: $(SRC)\n\tcat $(SRC) > server.sh\n",
			"watching the prerequisites of the target build of Makefile: server.src notes/*.sh", "notes/store.sh", ""},
		{"tree", ".PHONY: build\nbuild:\n\tcat server.src notes/store.sh > server.sh\n",
			"the build names no sources: watching every file of the project", "notes/store.sh", "not watched, written by the build: server.sh\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "server.src"), "#!/bin/sh\n")
			writeFile(t, filepath.Join(dir, "notes", "store.sh"), "VERSION=2\nexec cat\n")
			writeFile(t, filepath.Join(dir, "Makefile"), c.makefile)
			writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"notes\"\ncommand = [\"/bin/sh\", \"server.sh\"]\n")
			env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + filepath.Dir(mk) + string(os.PathListSeparator) + os.Getenv("PATH"),
				"NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
			if out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code"); code != 0 {
				t.Fatalf("init: exit %d\n%s", code, out)
			}
			dev := startDev(t, dir, env, bin)
			dev.waitFor(t, c.note)
			dev.waitFor(t, "build complete")
			if c.learnt != "" {
				dev.waitFor(t, c.learnt)
			}
			writeFile(t, filepath.Join(dir, filepath.FromSlash(c.save)), "VERSION=3\nexec cat\n")
			dev.waitFor(t, "changed: "+c.save)
			dev.waitFor(t, "build complete")
			b, err := os.ReadFile(filepath.Join(dir, "server.sh"))
			if err != nil || !strings.Contains(string(b), "VERSION=3") {
				t.Errorf("server.sh after the save: %q, %v", b, err)
			}
			dev.interrupt(t)
			if n := strings.Count(dev.String(), "building"); n != 2 {
				t.Errorf("%d builds, want 2: the first and the save's (the build's own output is no change)\n%s", n, dev.String())
			}
		})
	}
}

// dev --build runs its command as a shell would: quotes and && mean what
// they mean at a prompt.
func TestDevBuildHonoursShellQuoting(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "server next.src"), "#!/bin/sh\nexec cat\n")
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"q\"\ncommand = [\"/bin/sh\", \"server.sh\"]\n")
	env := []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
	dev := startDev(t, dir, env, bin, "--watch", "*.src", "--build", `sh -c 'sleep 0; cp "server next.src" server.sh' && echo 'two  words' > built.txt`)
	dev.waitFor(t, "build ok")
	dev.waitFor(t, "build complete")
	dev.interrupt(t)
	if b, err := os.ReadFile(filepath.Join(dir, "built.txt")); err != nil || string(b) != "two  words\n" {
		t.Errorf("built.txt %q, %v: the command was not run as the shell reads it\n%s", b, err, dev.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "server.sh")); err != nil {
		t.Errorf("server.sh not built: %v\n%s", err, dev.String())
	}
}
