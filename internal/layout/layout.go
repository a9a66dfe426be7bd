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
//	  hosts/<run>.json             each live host's execution record
//	  grants/<run>.json            each agent run's grants
//	  cache/                       stat and file-digest caches
//
// Directories are created with [MkdirAll], mode 0700, whichever command
// comes first: the grants, audit log and sockets below must not be readable
// by other users, and a 0755 .mcpepoch made by one command would expose the
// names of the others' files. Modes are subject to the umask, which can
// only remove bits. Directories that already exist are left as they are.
//
// Project roots passed here are the caller's choice of spelling; callers
// that compare paths resolve symlinks first (see notify.Dir).
package layout

import (
	"os"
	"path/filepath"

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

// Hosts returns the directory of the live hosts' execution records,
// <root>/.mcpepoch/hosts.
func Hosts(root string) string { return filepath.Join(root, DirName, "hosts") }

// HostRecord returns the execution record of the host of agent run,
// <root>/.mcpepoch/hosts/<run>.json.
func HostRecord(root string, run epoch.RunID) string {
	return filepath.Join(Hosts(root), string(run)+".json")
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
// os.MkdirAll. Use it for every directory under DirName.
func MkdirAll(dir string) error { return os.MkdirAll(dir, DirMode) }
