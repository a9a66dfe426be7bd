package build

import (
	"fmt"
	"path/filepath"
	"strings"
)

// UncoveredError says that a launch's identity hashes no file inside its
// project: neither its entry, nor code, nor a wrapper lies there (a
// program on PATH, a package manager's own script, a server installed
// elsewhere). Whatever code of the project it loads would change with no
// change of identity, so the host refuses such a launch, and doctor
// reports it. Dependency trees and lockfiles do not count: they say which
// packages are installed, not which code runs.
type UncoveredError struct {
	Dir     string   // the project directory
	Command []string // the launch command
	Entry   string   // the entry the identity names (outside Dir)
}

func (e *UncoveredError) Error() string {
	return fmt.Sprintf("launch command %q: its identity hashes no file of the project %s (the entry is %s): an edit of the server's code would not change its execution epoch; "+
		"name the code it loads in mcpepoch.toml (code = [\"server.mjs\", \"lib\"]), or set command = [...] to run the runtime on the entry itself (command = [\"node\", \"server.mjs\"])",
		e.Command, e.Dir, e.Entry)
}

// Uncovered returns an *UncoveredError when id hashes no file inside
// id.Dir as its entry, code or a wrapper (a file missing because it is
// not built yet counts: it is named); nil otherwise.
func (id *Identity) Uncovered() error {
	in := func(a Artifact) bool {
		return a.Path != "" && !filepath.IsAbs(a.Path) && a.Path != ".." && !strings.HasPrefix(a.Path, "../")
	}
	if in(id.Entry) {
		return nil
	}
	for _, list := range [][]Artifact{id.Code, id.Wrappers} {
		for _, a := range list {
			if in(a) {
				return nil
			}
		}
	}
	return &UncoveredError{Dir: id.Dir, Command: id.Command, Entry: id.Entry.Path}
}
