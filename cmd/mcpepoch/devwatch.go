package main

import (
	"fmt"
	"strings"

	buildfiles "github.com/mcpepoch/mcpepoch/project"
)

// makeWatch returns the globs dev watches for the make target name: the
// files it is built from (its prerequisites, through the targets they
// name), and notes on what it could not read.
func makeWatch(mf *buildfiles.Makefile, name string) (watch, notes []string) {
	globs, unread := mf.Sources(name)
	for _, u := range unread {
		notes = append(notes, fmt.Sprintf("prerequisite %q is computed when make runs: its files are not watched (pass --watch)", u))
	}
	if len(globs) > 0 {
		notes = append(notes, "watching the prerequisites of the target "+name+" of "+mf.Path+": "+strings.Join(globs, " ")+" (pass --watch to choose)")
	}
	return globs, notes
}

// treeIgnored are what a watch of the whole project leaves out besides
// devloop's own skipped directories (.git, node_modules, .venv, .mcpepoch,
// __pycache__ …) and editors' temporary files: hidden files and
// directories, the usual output directories, and compiled files.
var treeIgnored = []string{".*", "bin/", "dist/", "build/", "out/", "target/", "*.pyc", "*.o", "*.log"}

// treeAll is the first glob of a watch of the whole project.
const treeAll = "**/*"

// treeWatch returns the globs of a watch of the whole project: every file
// but treeIgnored and the files the Makefile's rules write (their targets).
func treeWatch(p *buildfiles.Project) []string {
	watch := []string{treeAll, "!**/.*", "!**/.*/**", "!**/*.pyc", "!**/*.o", "!**/*.log"}
	for _, d := range []string{"bin", "dist", "build", "out", "target"} {
		watch = append(watch, "!"+d+"/**")
	}
	if p.Makefile != nil {
		for _, t := range p.Makefile.Targets {
			if !strings.ContainsAny(t.Name, `*?[]{}\!`) {
				watch = append(watch, "!"+t.Name)
			}
		}
	}
	return watch
}
