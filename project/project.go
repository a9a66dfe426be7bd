// Package project describes an MCP server's project from its build files:
// the Taskfile (go-task v3, read with go-task's own taskfile/ast), the
// Makefile, package.json and tsconfig.json, go.mod and pyproject.toml, and
// the lockfiles beside them. It reads and never runs anything: `mcpepoch
// init` decides from a [Project] what to write, `mcpepoch doctor` what is
// wrong, and `mcpepoch dev` what to watch and how to build.
//
// Every file is optional. A file that exists but cannot be read or parsed
// makes [Read] return a [*FileError] naming it; nothing is guessed from a
// file that failed.
package project

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// Project is what [Read] found in a project root. Paths are relative to
// Root, slash-separated.
type Project struct {
	Root      string     // absolute
	Taskfile  *Taskfile  // nil when the root has none
	Makefile  *Makefile  // nil when the root has none
	Package   *Package   // package.json; nil when absent
	TSConfig  *TSConfig  // tsconfig.json; nil when absent
	GoMod     *GoMod     // go.mod; nil when absent
	PyProject *PyProject // pyproject.toml; nil when absent
	Lockfiles []string   // lockfiles present in the root, in [LockfileNames] order
	Config    bool       // whether mcpepoch.toml exists
}

// LockfileNames are the lockfiles looked for in the root, in order.
var LockfileNames = []string{
	"package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lock", "bun.lockb",
	"go.sum", "uv.lock", "poetry.lock", "Pipfile.lock", "requirements.txt", "Cargo.lock",
}

// maxFile bounds each build file read: 4 MiB, far above any real one.
const maxFile = 4 << 20

// FileError is a build file that exists but could not be read or parsed.
type FileError struct {
	Path string // absolute
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Read describes the project in root. It returns a [*FileError] for the
// first build file that exists but cannot be read or parsed.
func Read(root string) (*Project, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	p := &Project{Root: abs}
	steps := []func() error{p.readTaskfile, p.readMakefile, p.readPackage, p.readTSConfig, p.readGoMod, p.readPyProject}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	for _, name := range LockfileNames {
		if fi, err := os.Stat(filepath.Join(abs, name)); err == nil && fi.Mode().IsRegular() {
			p.Lockfiles = append(p.Lockfiles, name)
		}
	}
	if fi, err := os.Stat(filepath.Join(abs, "mcpepoch.toml")); err == nil && fi.Mode().IsRegular() {
		p.Config = true
	}
	return p, nil
}

// readFile returns the content of root/rel, or nil and no error when it
// does not exist. Anything but a regular file of at most maxFile bytes is
// an error; a FIFO is not opened for reading.
func (p *Project) readFile(rel string) ([]byte, error) {
	path := filepath.Join(p.Root, filepath.FromSlash(rel))
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &FileError{Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	f, err := safefile.Open(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	if len(b) > maxFile {
		return nil, &FileError{Path: path, Err: fmt.Errorf("larger than %d bytes", maxFile)}
	}
	return b, nil
}

// fileError wraps err as a *FileError for root/rel.
func (p *Project) fileError(rel string, err error) error {
	return &FileError{Path: filepath.Join(p.Root, filepath.FromSlash(rel)), Err: err}
}

// firstExisting returns the first of names that exists in the root, or "".
func (p *Project) firstExisting(names ...string) string {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(p.Root, n)); err == nil {
			return n
		}
	}
	return ""
}

// exists reports whether root/rel is a regular file.
func (p *Project) exists(rel string) bool {
	fi, err := os.Stat(filepath.Join(p.Root, filepath.FromSlash(rel)))
	return err == nil && fi.Mode().IsRegular()
}
