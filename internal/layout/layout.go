// Package layout owns the project's state directory, <root>/.mcpepoch: the
// name of every file and directory mcpepoch keeps there, and the mode they
// are created with. Every package that reads or writes under .mcpepoch/
// builds its path here, so the tree below is the whole of it:
//
//	<root>/.mcpepoch/              DirMode (0700)
//	  manifest.toml                run manifest, written by `mcpepoch record`
//	  manifest.lock                flock serializing manifest writers
//	  builds.jsonl                 hash-chained log of builds no host heard
//	  audit.jsonl                  the hosts' hash-chained audit log
//	  builds.*, audit.*            each log's head, lock and lost-record
//	                               count, named by package audit from the
//	                               log's path (audit.HeadPath, LostPath)
//	  digest.key                   the project's digest key (audit.LoadKey)
//	  sock/<run>.sock              each host's local socket (when short enough)
//	  sock/<epoch>.cred            each epoch's credentials broker socket, in
//	                               the host's socket directory (CredentialSocket)
//	  hosts/<run>.json             each live host's execution record
//	  grants/<run>.json            each agent run's grants
//	  revoke/<grant>               a person's request to end a grant, read by
//	                               the host that holds it (RevokeRequest)
//	  cache/                       stat and file-digest caches
//
// Directories are created with [MkdirAll], mode 0700, whichever command
// comes first: the grants, audit log and sockets below must not be readable
// by other users, and a 0755 .mcpepoch made by one command would expose the
// names of the others' files. Modes are subject to the umask, which can
// only remove bits. Directories that already exist are left as they are.
//
// What mcpepoch keeps about a project outside it, out of reach of a program
// confined to the project, is in the user's state directory for the
// project (ProjectState, state.go).
//
// Project roots passed here are the caller's choice of spelling; callers
// that compare paths resolve symlinks first (see notify.Dir).
package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcpepoch/mcpepoch/epoch"
)

// DirName is the name of the state directory inside a project root.
const DirName = ".mcpepoch"

// DirMode is the mode every directory under DirName is created with.
const DirMode os.FileMode = 0o700

// Dir returns <root>/.mcpepoch.
func Dir(root string) string { return filepath.Join(root, DirName) }

// Manifest returns the run manifest's path, <root>/.mcpepoch/manifest.toml.
func Manifest(root string) string { return filepath.Join(root, DirName, "manifest.toml") }

// ManifestLock returns the manifest writers' lock file,
// <root>/.mcpepoch/manifest.lock.
func ManifestLock(root string) string { return filepath.Join(root, DirName, "manifest.lock") }

// Builds returns the builds log, <root>/.mcpepoch/builds.jsonl: builds
// recorded while no host was listening.
func Builds(root string) string { return filepath.Join(root, DirName, "builds.jsonl") }

// Audit returns the audit log, <root>/.mcpepoch/audit.jsonl, shared by
// every host of the project.
func Audit(root string) string { return filepath.Join(root, DirName, "audit.jsonl") }

// DigestKey returns the project's digest key, <root>/.mcpepoch/digest.key
// (mode 0600; see audit.LoadKey): the key of the HMAC digests of tool
// arguments and environment values.
func DigestKey(root string) string { return filepath.Join(root, DirName, "digest.key") }

// Sock returns the default socket directory, <root>/.mcpepoch/sock. When a
// socket in it would be too long, notify uses a short directory elsewhere.
func Sock(root string) string { return filepath.Join(root, DirName, "sock") }

// CredentialSocket returns the credentials broker socket of epoch ep in
// sockDir, the directory of the host's own socket (sock/ above, or the
// short directory notify chose for a long project path):
// <sockDir>/<epoch>.cred. The name is as long as a host socket's, so it
// fits wherever that one does.
func CredentialSocket(sockDir string, ep epoch.Epoch) string {
	return filepath.Join(sockDir, string(ep)+".cred")
}

// Hosts returns the directory of the live hosts' execution records,
// <root>/.mcpepoch/hosts.
func Hosts(root string) string { return filepath.Join(root, DirName, "hosts") }

// HostRecord returns the execution record of the host of agent run,
// <root>/.mcpepoch/hosts/<run>.json.
func HostRecord(root string, run epoch.RunID) string {
	return filepath.Join(Hosts(root), string(run)+".json")
}

// Revokes returns the directory of revoke requests, <root>/.mcpepoch/revoke.
func Revokes(root string) string { return filepath.Join(root, DirName, "revoke") }

// RevokeRequest returns the request file that asks the host holding grant
// id to end it, <root>/.mcpepoch/revoke/<id>: mcpepoch revoke writes it
// beside its socket request, for a host whose socket it cannot reach.
func RevokeRequest(root string, id epoch.GrantID) string {
	return filepath.Join(Revokes(root), string(id))
}

// Grants returns the grant stores' directory, <root>/.mcpepoch/grants.
func Grants(root string) string { return filepath.Join(root, DirName, "grants") }

// GrantStore returns the grant store of agent run,
// <root>/.mcpepoch/grants/<run>.json.
func GrantStore(root string, run epoch.RunID) string {
	return filepath.Join(Grants(root), string(run)+".json")
}

// Cache returns the identity caches' directory, <root>/.mcpepoch/cache.
func Cache(root string) string { return filepath.Join(root, DirName, "cache") }

// MkdirAll creates dir and any missing parents with mode DirMode, like
// os.MkdirAll. Use it for every directory under DirName. When dir is or
// lies under a DirName directory, that directory must be one the caller
// owns (CheckDir), or nothing is created and a *StateDirError says why.
func MkdirAll(dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if filepath.Base(d) == DirName {
			if err := os.MkdirAll(d, DirMode); err != nil {
				return err
			}
			if err := checkState(d); err != nil {
				return err
			}
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return os.MkdirAll(dir, DirMode)
}

// CheckDir reports whether <root>/.mcpepoch, if it exists, is safe to keep
// mcpepoch's state in: a directory, not a symbolic link, owned by the
// user running mcpepoch. Grants, the audit log and the sockets there decide
// who may call what; a directory another user controls could be swapped
// under them. A missing directory is no error.
func CheckDir(root string) error {
	err := checkState(Dir(root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func checkState(d string) error {
	fi, err := os.Lstat(d)
	switch {
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink != 0:
		return &StateDirError{Path: d, Problem: "is a symbolic link"}
	case !fi.IsDir():
		return &StateDirError{Path: d, Problem: "is not a directory"}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &StateDirError{Path: d, Problem: fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid())}
	}
	return nil
}

// StateDirError refuses a .mcpepoch directory mcpepoch must not write in.
type StateDirError struct {
	Path    string
	Problem string // "is a symbolic link", "is owned by uid 1001, not by you (uid 1000)"
}

func (e *StateDirError) Error() string {
	return fmt.Sprintf("%s %s: refusing to keep grants, the audit log and sockets in it (remove it, or make it a directory of yours, mode 0700)", e.Path, e.Problem)
}
