// Package templates holds the snippets that wire a project to mcpepoch: the
// build hook for go-task and make, client configurations that launch a server
// through `mcpepoch host`, and a .gitignore entry. `mcpepoch template NAME`
// prints one of them.
//
// The snippets are the files of this directory, embedded at build time:
//
//	claude-code.mcp.json   Claude Code project config (.mcp.json)
//	gitignore              .gitignore lines for .mcpepoch/
//	mcpepoch.Taskfile.yml  includable Taskfile with the task "record"
//	mcpepoch.mk            Makefile fragment defining MCPEPOCH_RECORD
//	vscode.mcp.json        VS Code workspace config (.vscode/mcp.json)
package templates

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed claude-code.mcp.json gitignore mcpepoch.Taskfile.yml mcpepoch.mk vscode.mcp.json
var files embed.FS

// Names returns the names of all templates, sorted.
func Names() []string {
	// Reading the root of an embed.FS cannot fail.
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// Get returns the content of the template name, one of Names. The caller may
// modify the returned slice. An unknown name yields an *UnknownError.
func Get(name string) ([]byte, error) {
	if !slices.Contains(Names(), name) {
		return nil, &UnknownError{Name: name, Valid: Names()}
	}
	return files.ReadFile(name)
}

// UnknownError is returned by Get for a name that is not a template.
type UnknownError struct {
	Name  string   // the name asked for
	Valid []string // the names of all templates, sorted
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown template %q (known: %s)", e.Name, strings.Join(e.Valid, ", "))
}
