package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The user's state directory for a project: what mcpepoch keeps about a
// project outside it, where a program confined to the project (an agent
// in a sandbox that may write the project and a temporary directory only)
// cannot write. The host keeps a copy of the audit log's head and of its
// signed checkpoints there (package audit, Options.CopyDir), so that a log
// rewritten with a new hash chain while no host runs no longer verifies.
//
//	$XDG_STATE_HOME/mcpepoch/<project id>/   when XDG_STATE_HOME is absolute
//	~/.local/state/mcpepoch/<project id>/    otherwise (Linux)
//	~/Library/Application Support/mcpepoch/state/<project id>/   (macOS)
//	  audit.head                 the copy of .mcpepoch/audit.head
//	  audit.checkpoints.jsonl    seq and hash of each signed checkpoint
//
// The project id is the SHA-256, in hex, of the project root's absolute
// path with symbolic links resolved (ProjectID), as the policy floor's
// file name is: a project moved or reached by another real path is
// another project.

// StateHome returns the user's state directory for mcpepoch: StateHomeEnv
// when it is an absolute path, joined with "mcpepoch", else the platform's
// default under the home directory (stateDefault). An error, naming the
// variables, when neither can be named (HOME unset or relative, or
// XDG_STATE_HOME relative and no home).
func StateHome() (string, error) {
	if x := os.Getenv(StateHomeEnv); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "mcpepoch"), nil
	}
	home := os.Getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("no state directory: " + StateHomeEnv + " is not an absolute path and HOME is not set to one")
	}
	return stateDefault(home), nil
}

// StateHomeEnv is the variable that names the user's state directory
// (XDG Base Directory).
const StateHomeEnv = "XDG_STATE_HOME"

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
// that would lie inside the project (XDG_STATE_HOME pointed into it) is
// an error: what is kept there must be out of the project's reach.
func ProjectState(root string) (string, error) {
	home, err := StateHome()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, ProjectID(root))
	if inside(dir, root) {
		return "", fmt.Errorf("no state directory: %s lies inside the project %s; set %s to a directory outside it", dir, root, StateHomeEnv)
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
