package project

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// GoMod is what go.mod and the package layout say about a Go server.
type GoMod struct {
	Module string // the module path
	// Mains are the directories (relative, "." for the root) holding a
	// package main: the root and each directory under cmd/, sorted.
	Mains []string
}

// PyProject is what pyproject.toml says about a Python server.
type PyProject struct {
	Name    string
	Scripts map[string]string // [project.scripts]: command → "module:function"
}

func (p *Project) readGoMod() error {
	const rel = "go.mod"
	b, err := p.readFile(rel)
	if err != nil || b == nil {
		return err
	}
	g := &GoMod{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "module" {
			g.Module = strings.Trim(f[1], `"`)
			break
		}
	}
	if g.Module == "" {
		return p.fileError(rel, errorString("no module line"))
	}
	dirs := []string{"."}
	if entries, err := os.ReadDir(filepath.Join(p.Root, "cmd")); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, "cmd/"+e.Name())
			}
		}
	}
	for _, d := range dirs {
		if hasPackageMain(filepath.Join(p.Root, filepath.FromSlash(d))) {
			g.Mains = append(g.Mains, d)
		}
	}
	slices.Sort(g.Mains)
	p.GoMod = g
	return nil
}

// hasPackageMain reports whether a non-test .go file in dir says package main.
func hasPackageMain(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := safefile.ReadFile(f, maxFile) // a FIFO or a link to /dev/zero named x.go
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "package ") {
				if line == "package main" {
					return true
				}
				break
			}
		}
	}
	return false
}

func (p *Project) readPyProject() error {
	const rel = "pyproject.toml"
	b, err := p.readFile(rel)
	if err != nil || b == nil {
		return err
	}
	var raw struct {
		Project struct {
			Name    string            `toml:"name"`
			Scripts map[string]string `toml:"scripts"`
		} `toml:"project"`
	}
	if _, err := toml.Decode(string(b), &raw); err != nil {
		return p.fileError(rel, err)
	}
	p.PyProject = &PyProject{Name: raw.Project.Name, Scripts: raw.Project.Scripts}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }
