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
// is projectRoot. projectRoot must be absolute and clean; callers pass the
// result of filepath.EvalSymlinks so that every spelling of the project
// reaches the same hosts. Dir creates nothing; [Listen] does.
//
// The default is <projectRoot>/.mcpepoch/sock. When a socket in it,
// <dir>/<26-character run id>.sock, would be longer than MaxSocketPath bytes,
// Dir returns a short directory named by the first 16 hex digits of
// SHA-256(projectRoot) instead:
//
//	$XDG_RUNTIME_DIR/mcpepoch/<16 hex>   when XDG_RUNTIME_DIR is an absolute
//	                                      directory owned by the effective uid
//	                                      and the socket path fits
//	/tmp/mcpepoch-<euid>/<16 hex>         otherwise
//
// The choice is a function of projectRoot, the effective uid and
// XDG_RUNTIME_DIR only, so the hook and the hosts derive the same directory
// as long as they see the same XDG_RUNTIME_DIR. [Hosts] also looks in the
// /tmp form when the XDG form applies, so a hook that sees XDG_RUNTIME_DIR
// still reaches a host started without it; the opposite case (host with,
// hook without) is not detected.
//
// The error names projectRoot when it is not an absolute clean path.
func Dir(projectRoot string) (string, error) {
	ds, err := candidateDirs(projectRoot)
	if err != nil {
		return "", err
	}
	return ds[0].dir, nil
}

// sockDir is one place a project's sockets may live. base is the per-user
// parent of a short directory, which must be private too; it is empty for
// the default directory inside the project.
type sockDir struct {
	dir  string
	base string
}

// candidateDirs returns Dir(projectRoot) first, then any other directory a
// host of the same project may have chosen under another XDG_RUNTIME_DIR.
func candidateDirs(projectRoot string) ([]sockDir, error) {
	if !filepath.IsAbs(projectRoot) || filepath.Clean(projectRoot) != projectRoot {
		return nil, fmt.Errorf("project root %q is not an absolute clean path", projectRoot)
	}
	def := filepath.Join(projectRoot, ".mcpepoch", "sock")
	if fits(def) {
		return []sockDir{{dir: def}}, nil
	}
	sum := sha256.Sum256([]byte(projectRoot))
	leaf := hex.EncodeToString(sum[:8])
	tmpBase := filepath.Join("/tmp", "mcpepoch-"+strconv.Itoa(os.Geteuid()))
	tmp := sockDir{dir: filepath.Join(tmpBase, leaf), base: tmpBase}
	if x := runtimeDir(); x != "" {
		base := filepath.Join(x, "mcpepoch")
		if d := filepath.Join(base, leaf); fits(d) {
			return []sockDir{{dir: d, base: base}, tmp}, nil
		}
	}
	return []sockDir{tmp}, nil
}

// fits reports whether a socket named by a run id in dir stays within
// MaxSocketPath bytes.
func fits(dir string) bool {
	return len(dir)+1+nameLen+len(SocketSuffix) <= MaxSocketPath
}

// runtimeDir returns $XDG_RUNTIME_DIR, cleaned, when it is an absolute
// directory owned by the effective uid, and "" otherwise.
func runtimeDir() string {
	x := os.Getenv("XDG_RUNTIME_DIR")
	if x == "" || !filepath.IsAbs(x) {
		return ""
	}
	x = filepath.Clean(x)
	fi, err := os.Stat(x)
	if err != nil || !fi.IsDir() || ownerUID(fi) != os.Geteuid() {
		return ""
	}
	return x
}

// ownerUID returns the uid owning the file fi describes, or -1.
func ownerUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// makeDir creates (if needed) and checks the socket directory of
// projectRoot and returns it. Directories this package owns are made mode
// 0700; an existing one must be a real directory owned by the effective uid
// and is tightened to 0700 if it is group or world accessible.
func makeDir(projectRoot string) (string, error) {
	ds, err := candidateDirs(projectRoot)
	if err != nil {
		return "", err
	}
	d := ds[0]
	if d.base == "" {
		// <root>/.mcpepoch is shared with the run manifest; only its sock
		// subdirectory is private. The project root itself must exist.
		parent := filepath.Dir(d.dir)
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("socket directory: %w", err)
		}
	} else if err := mkdirPrivate(d.base); err != nil {
		return "", err
	}
	if err := mkdirPrivate(d.dir); err != nil {
		return "", err
	}
	return d.dir, nil
}

// mkdirPrivate makes dir with mode 0700 unless it exists, then checks that
// it is a directory (not a symlink) owned by the effective uid and sets its
// mode to 0700 if it is anything else.
func mkdirPrivate(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := checkOwned(dir)
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

// checkOwned returns the Lstat of dir after checking that it is a directory
// owned by the effective uid.
func checkOwned(dir string) (fs.FileInfo, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("socket directory %s: not a directory (mode %v)", dir, fi.Mode())
	}
	if uid, euid := ownerUID(fi), os.Geteuid(); uid != euid {
		return nil, fmt.Errorf("socket directory %s: owned by uid %d, not by uid %d", dir, uid, euid)
	}
	return fi, nil
}

// checkPrivate checks, without changing anything, that dir is a directory
// owned by the effective uid with no group or world permission bits. It
// returns fs.ErrNotExist (wrapped) when dir does not exist.
func checkPrivate(dir string) error {
	fi, err := checkOwned(dir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("socket directory %s: mode %#o is group or world accessible, want 0700", dir, perm)
	}
	return nil
}

// Hosts returns the socket paths of the project's hosts, live or stale,
// sorted by run id within each directory, Dir(projectRoot) first. Only
// entries named <ULID>.sock that are sockets count. A socket directory that
// does not exist yet means no hosts: the result is empty and the error nil.
//
// The directory must be owned by the effective uid and not be group or world
// accessible; otherwise Hosts returns an error naming it. Problems with the
// secondary /tmp directory (see Dir) are ignored.
func Hosts(projectRoot string) ([]string, error) {
	ds, err := candidateDirs(projectRoot)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, d := range ds {
		paths, err := listSockets(d)
		if err != nil {
			if i == 0 {
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
func listSockets(d sockDir) ([]string, error) {
	for _, dir := range []string{d.base, d.dir} {
		if dir == "" {
			continue
		}
		if err := checkPrivate(dir); err != nil {
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
		if !ok || !isULID(stem) || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		paths = append(paths, filepath.Join(d.dir, e.Name()))
	}
	sort.Strings(paths)
	return paths, nil
}
