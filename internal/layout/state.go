package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/userdirs"
)

// The user's state directory for a project: what mcpepoch keeps about a
// project outside it, where a program confined to the project (an agent
// in a sandbox that may write the project and a temporary directory only)
// cannot write. The host keeps a copy of the audit log's head and of its
// signed checkpoints there (package audit, Options.CopyDir), so that a log
// rewritten with a new hash chain while no host runs no longer verifies.
//
//	~/.local/state/mcpepoch/<project id>/    (Linux and other unix)
//	~/Library/Application Support/mcpepoch/state/<project id>/   (macOS)
//	  audit.head                 the copy of .mcpepoch/audit.head
//	  audit.checkpoints.jsonl    seq and hash of each signed checkpoint
//
// ~ is the home directory the account database gives the user, never
// $HOME or $XDG_STATE_HOME, which whoever launched the process chose
// (internal/userdirs, where the test builds' exception is too).
//
// The project id is the SHA-256, in hex, of the project root's absolute
// path with symbolic links resolved (ProjectID), as the policy floor's
// file name is: a project moved or reached by another real path is
// another project.

// StateHome returns the user's state directory for mcpepoch
// (userdirs.State), or an error saying why there is none (no entry for
// the user in the account database, or a home there that is not
// absolute).
func StateHome() (string, error) { return userdirs.State() }

// ProjectID returns the id of the project at root: the SHA-256, in hex,
// of root made absolute with symbolic links resolved (each step skipped
// when it fails).
func ProjectID(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:])
}

// ProjectState returns the state directory of the project at root,
// StateHome()/<ProjectID(root)>. It does not create it. A state directory
// that would lie inside the project (a project that holds the home
// directory) is an error: what is kept there must be out of the project's
// reach.
func ProjectState(root string) (string, error) {
	home, err := StateHome()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, ProjectID(root))
	if inside(dir, root) {
		return "", fmt.Errorf("no state directory: %s lies inside the project %s, where the project's own programs could rewrite what is kept there; serve a project that does not contain your home directory", dir, root)
	}
	return dir, nil
}

// inside reports whether dir is root or below it, symbolic links of the
// longest existing parent of each resolved.
func inside(dir, root string) bool {
	d, r := resolve(dir), resolve(root)
	rel, err := filepath.Rel(r, d)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolve returns p absolute, with the symbolic links of its longest
// existing prefix resolved.
func resolve(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if d == filepath.Dir(d) {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}
