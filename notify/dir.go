package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// MaxSocketPath is the longest socket path this package creates, in bytes.
// sockaddr_un.sun_path holds 108 bytes on Linux and 104 on macOS, both
// including the terminating NUL; 103 fits both.
const MaxSocketPath = 103

// SocketSuffix ends the name of every host socket: <run id>.sock.
const SocketSuffix = ".sock"

// nameLen is the length of a ULID run id, the stem of a socket name.
const nameLen = 26

// Dir returns the directory that holds the sockets of the project whose root
// is projectRoot: the first of the candidates below, where Listen puts a
// host's socket unless that directory cannot be made private (then it takes
// the next; [Listener.Path] tells). projectRoot must be absolute and clean;
// callers pass the result of filepath.EvalSymlinks so that every spelling of
// the project reaches the same hosts. Dir creates nothing; [Listen] does.
//
// The default is <projectRoot>/.mcpepoch/sock. When a socket in it,
// <dir>/<26-character run id>.sock, would be longer than MaxSocketPath bytes,
// the candidates are short directories named by the first 16 hex digits of
// SHA-256(projectRoot), in this order:
//
//	$XDG_RUNTIME_DIR/mcpepoch/<16 hex>   when XDG_RUNTIME_DIR is an absolute
//	                                      directory owned by the effective uid
//	                                      and the socket path fits
//	$HOME/.cache/mcpepoch/<16 hex>       when HOME is an absolute directory
//	                                      owned by the effective uid and not
//	                                      group or world writable, and the
//	                                      socket path fits
//	/tmp/mcpepoch-<euid>/<16 hex>         always, last
//
// Other users can create /tmp/mcpepoch-<euid> before us; a directory owned
// by someone else is never used (Listen's error says so and suggests setting
// XDG_RUNTIME_DIR), which is why the directories under $XDG_RUNTIME_DIR and
// $HOME, which others cannot create, come first.
//
// The candidates are a function of projectRoot, the effective uid,
// XDG_RUNTIME_DIR and HOME only, so the hook and the hosts derive the same
// list as long as they see the same environment. [Hosts] looks in every
// candidate, so a hook that sees XDG_RUNTIME_DIR still reaches a host
// started without it; a host that saw XDG_RUNTIME_DIR or HOME when the hook
// does not see them is not found.
//
// The error names projectRoot when it is not an absolute clean path.
func Dir(projectRoot string) (string, error) {
	ds, err := currentEnv().candidateDirs(projectRoot)
	if err != nil {
		return "", err
	}
	return ds[0].dir, nil
}

// dirEnv is what the choice of socket directory depends on besides the
// project root. currentEnv gives the process's; tests use others.
type dirEnv struct {
	euid int
	xdg  string // $XDG_RUNTIME_DIR
	home string // $HOME
	tmp  string // the shared temporary directory, "/tmp"
}

func currentEnv() dirEnv {
	return dirEnv{euid: os.Geteuid(), xdg: os.Getenv("XDG_RUNTIME_DIR"), home: os.Getenv("HOME"), tmp: "/tmp"}
}

// sockDir is one place a project's sockets may live. base is the per-user
// parent of a short directory, which must be private too; it is empty for
// the default directory inside the project. parent, when set, is base's
// parent ($HOME/.cache): created (0700) if missing, and it must be a
// directory owned by the effective uid.
type sockDir struct {
	dir    string
	base   string
	parent string
	// shared: base is in a directory every user can write (/tmp), where
	// another user may have created it first.
	shared bool
}

// candidateDirs returns the directories a host of the project may use, in
// the order Listen tries them (see Dir).
func (e dirEnv) candidateDirs(projectRoot string) ([]sockDir, error) {
	if !filepath.IsAbs(projectRoot) || filepath.Clean(projectRoot) != projectRoot {
		return nil, fmt.Errorf("project root %q is not an absolute clean path", projectRoot)
	}
	def := layout.Sock(projectRoot)
	if fits(def) {
		return []sockDir{{dir: def}}, nil
	}
	sum := sha256.Sum256([]byte(projectRoot))
	leaf := hex.EncodeToString(sum[:8])
	var ds []sockDir
	if x := e.runtimeDir(); x != "" {
		base := filepath.Join(x, "mcpepoch")
		if d := filepath.Join(base, leaf); fits(d) {
			ds = append(ds, sockDir{dir: d, base: base})
		}
	}
	if h := e.homeDir(); h != "" {
		cache := filepath.Join(h, ".cache")
		base := filepath.Join(cache, "mcpepoch")
		if d := filepath.Join(base, leaf); fits(d) {
			ds = append(ds, sockDir{dir: d, base: base, parent: cache})
		}
	}
	tmpBase := filepath.Join(e.tmp, "mcpepoch-"+strconv.Itoa(e.euid))
	return append(ds, sockDir{dir: filepath.Join(tmpBase, leaf), base: tmpBase, shared: true}), nil
}

// fits reports whether a socket named by a run id in dir stays within
// MaxSocketPath bytes.
func fits(dir string) bool {
	return len(dir)+1+nameLen+len(SocketSuffix) <= MaxSocketPath
}

// runtimeDir returns $XDG_RUNTIME_DIR, cleaned, when it is an absolute
// directory owned by the effective uid, and "" otherwise.
func (e dirEnv) runtimeDir() string {
	x := e.xdg
	if x == "" || !filepath.IsAbs(x) {
		return ""
	}
	x = filepath.Clean(x)
	fi, err := os.Stat(x)
	if err != nil || !fi.IsDir() || ownerUID(fi) != e.euid {
		return ""
	}
	return x
}

// homeDir returns $HOME, cleaned, when it is an absolute directory owned by
// the effective uid that neither group nor others may write (so nobody else
// can create .cache in it), and "" otherwise.
func (e dirEnv) homeDir() string {
	h := e.home
	if h == "" || !filepath.IsAbs(h) {
		return ""
	}
	h = filepath.Clean(h)
	fi, err := os.Stat(h)
	if err != nil || !fi.IsDir() || ownerUID(fi) != e.euid || fi.Mode().Perm()&0o022 != 0 {
		return ""
	}
	return h
}

// ownerUID returns the uid owning the file fi describes, or -1.
func ownerUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// MakeDir creates (if needed) and checks the socket directory of
// projectRoot, the one a host listens in, and returns it. Directories this package owns are made mode
// 0700; an existing one must be a real directory owned by the effective uid
// and is tightened to 0700 if it is group or world accessible. When a short
// directory cannot be made so, the next candidate is tried (see Dir); the
// error, when none can, names each.
func MakeDir(projectRoot string) (string, error) {
	return currentEnv().makeDir(projectRoot)
}

func (e dirEnv) makeDir(projectRoot string) (string, error) {
	ds, err := e.candidateDirs(projectRoot)
	if err != nil {
		return "", err
	}
	if d := ds[0]; d.base == "" {
		// <root>/.mcpepoch is made as every command makes it (see
		// package layout); the sock subdirectory is checked and tightened
		// below. The project root itself must exist.
		parent := filepath.Dir(d.dir)
		if err := os.Mkdir(parent, layout.DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("socket directory: %w", err)
		}
		if err := e.mkdirPrivate(d.dir); err != nil {
			return "", err
		}
		return d.dir, nil
	}
	var failed []string
	for _, d := range ds {
		err := e.makeShort(d)
		if err == nil {
			return d.dir, nil
		}
		var no *notOwnedError
		if d.shared && errors.As(err, &no) && no.dir == d.base {
			err = fmt.Errorf("%w: another user created it, and it is not used; set XDG_RUNTIME_DIR to a directory of yours", err)
		}
		failed = append(failed, err.Error())
	}
	if len(failed) == 1 {
		return "", errors.New(failed[0])
	}
	return "", fmt.Errorf("no usable socket directory: %s", strings.Join(failed, "; "))
}

// makeShort creates and checks the short directory d.
func (e dirEnv) makeShort(d sockDir) error {
	if d.parent != "" {
		if err := os.Mkdir(d.parent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("socket directory: %w", err)
		}
		fi, err := os.Stat(d.parent)
		if err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("socket directory %s: not a directory (mode %v)", d.parent, fi.Mode())
		}
		if uid := ownerUID(fi); uid != e.euid {
			return &notOwnedError{dir: d.parent, uid: uid, euid: e.euid}
		}
	}
	if err := e.mkdirPrivate(d.base); err != nil {
		return err
	}
	return e.mkdirPrivate(d.dir)
}

// mkdirPrivate makes dir with mode 0700 unless it exists, then checks that
// it is a directory (not a symlink) owned by the effective uid and sets its
// mode to 0700 if it is anything else.
func (e dirEnv) mkdirPrivate(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := e.checkOwned(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("socket directory %s: %w", dir, err)
		}
	}
	return nil
}

// notOwnedError is a socket directory owned by another uid.
type notOwnedError struct {
	dir       string
	uid, euid int
}

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("socket directory %s: owned by uid %d, not by uid %d", e.dir, e.uid, e.euid)
}

// checkOwned returns the Lstat of dir after checking that it is a directory
// owned by the effective uid (else a *notOwnedError).
func (e dirEnv) checkOwned(dir string) (fs.FileInfo, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("socket directory %s: not a directory (mode %v)", dir, fi.Mode())
	}
	if uid := ownerUID(fi); uid != e.euid {
		return nil, &notOwnedError{dir: dir, uid: uid, euid: e.euid}
	}
	return fi, nil
}

// checkPrivate checks, without changing anything, that dir is a directory
// owned by the effective uid with no group or world permission bits. It
// returns fs.ErrNotExist (wrapped) when dir does not exist.
func (e dirEnv) checkPrivate(dir string) error {
	fi, err := e.checkOwned(dir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("socket directory %s: mode %#o is group or world accessible, want 0700", dir, perm)
	}
	return nil
}

// Hosts returns the socket paths of the project's hosts, live or stale,
// sorted by run id within each directory, in the order of the candidate
// directories (see Dir), Dir(projectRoot) first. Only entries named
// <ULID>.sock that are sockets count. A socket directory that does not exist
// yet means no hosts: the result is empty and the error nil.
//
// The directory must be owned by the effective uid and not be group or world
// accessible; otherwise Hosts returns an error naming it. Problems with
// the other candidates are ignored: their sockets are not listed.
func Hosts(projectRoot string) ([]string, error) {
	return currentEnv().hosts(projectRoot)
}

func (e dirEnv) hosts(projectRoot string) ([]string, error) {
	ds, err := e.candidateDirs(projectRoot)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, d := range ds {
		paths, err := e.listSockets(d)
		if err != nil {
			if i == 0 {
				var no *notOwnedError
				if d.shared && errors.As(err, &no) && no.dir == d.base {
					err = fmt.Errorf("%w: another user created it; set XDG_RUNTIME_DIR to a directory of yours, for the hosts and the hook alike", err)
				}
				return nil, err
			}
			continue
		}
		out = append(out, paths...)
	}
	return out, nil
}

// listSockets returns the sorted host sockets in d, or nothing when d does
// not exist.
func (e dirEnv) listSockets(d sockDir) ([]string, error) {
	for _, dir := range []string{d.base, d.dir} {
		if dir == "" {
			continue
		}
		if err := e.checkPrivate(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, err
		}
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	var paths []string
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), SocketSuffix)
		if !ok || !IsULID(stem) || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		paths = append(paths, filepath.Join(d.dir, e.Name()))
	}
	sort.Strings(paths)
	return paths, nil
}
