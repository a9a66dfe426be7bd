package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpepoch/mcpepoch/internal/userdirs"
)

// PermissionError reports a store file or directory whose owner or mode
// would let someone other than the user change what is trusted.
type PermissionError struct {
	Path   string
	Reason string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("trust store: %s: %s", e.Path, e.Reason)
}

// CheckPath checks the store file at path and every directory above it, as
// they are now (it is called on every Open and write, never cached):
//   - the file, if it exists: a regular file (not a symlink), owned by the
//     user, no group or other permission bits (0600);
//   - its directory, if it exists: owned by the user, no group or other
//     permission bits (0700);
//   - each parent, symlinks resolved, up to and including the home
//     directory: owned by the user or root, not writable by group or other.
//
// The home directory is userdirs.Home (the account database's, not
// $HOME). A store outside it is checked up to the root, where a directory writable by all is accepted only when
// it is root's and sticky (/tmp): others may not rename what is in it.
// Owner and mode are those of the effective user; this is a guard against
// other users and careless modes, not against programs of the same user,
// which the pinned Digest and signed changes are for.
func CheckPath(path string) error {
	uid := uint32(os.Geteuid())
	if err := checkEntry(path, uid, false); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := checkEntry(dir, uid, true); err != nil {
		return err
	}
	real, err := resolveExisting(filepath.Dir(dir))
	if err != nil {
		return err
	}
	home := ""
	if h, err := userdirs.Home(); err == nil {
		if rh, err := filepath.EvalSymlinks(h); err == nil {
			home = rh
		}
	}
	underHome := home != "" && (real == home || strings.HasPrefix(real, home+string(filepath.Separator)))
	for p := real; ; p = filepath.Dir(p) {
		if err := checkParent(p, uid, !underHome); err != nil {
			return err
		}
		if (underHome && p == home) || p == filepath.Dir(p) {
			return nil
		}
	}
}

// checkEntry checks the store file (dir false) or its directory (dir true)
// when it exists: the user's, mode with no group or other bits.
func checkEntry(p string, uid uint32, dir bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &PermissionError{Path: p, Reason: err.Error()}
	}
	switch {
	case dir && !fi.IsDir():
		return &PermissionError{Path: p, Reason: "not a directory (a symlink is not accepted)"}
	case !dir && !fi.Mode().IsRegular():
		return &PermissionError{Path: p, Reason: "not a regular file (a symlink is not accepted)"}
	}
	if o, ok := owner(fi); ok && o != uid {
		return &PermissionError{Path: p, Reason: fmt.Sprintf("owned by uid %d, want %d", o, uid)}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		want := "0600"
		if dir {
			want = "0700"
		}
		return &PermissionError{Path: p, Reason: fmt.Sprintf("mode %04o gives group or others access, want %s", perm, want)}
	}
	return nil
}

// checkParent checks a directory above the store's: the user's or root's,
// not writable by group or other unless sticky and root's (allowSticky).
func checkParent(p string, uid uint32, allowSticky bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return &PermissionError{Path: p, Reason: err.Error()}
	}
	o, ok := owner(fi)
	if ok && o != uid && o != 0 {
		return &PermissionError{Path: p, Reason: fmt.Sprintf("owned by uid %d, want %d or root", o, uid)}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		if allowSticky && fi.Mode()&fs.ModeSticky != 0 && ok && o == 0 {
			return nil
		}
		return &PermissionError{Path: p, Reason: fmt.Sprintf("mode %04o lets group or others write", fi.Mode().Perm())}
	}
	return nil
}

// resolveExisting returns the nearest existing ancestor of p (p itself if
// it exists) with symlinks resolved. What does not exist yet is checked
// when it is created.
func resolveExisting(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	for q := abs; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return r, nil
		}
		if q == filepath.Dir(q) {
			return "", &PermissionError{Path: p, Reason: "no part of the path exists"}
		}
	}
}

// owner returns the uid owning fi, where the platform says.
func owner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
